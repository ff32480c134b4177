"""Speculative decoding in the serving simulation (engine/serving/speculative.py): the expected tokens per step
by hand, the scheduler's steps, the draft's cost and memory, and a hand-computed memory-roofline case."""

import numpy as np
import pytest
from pydantic import ValidationError

import engine
from engine.serving import ServingOptions, schedule, serve
from engine.serving.simulate import kv_budget
from engine.serving.speculative import SpeculativeDecoding, draft_weight_bytes, expected_tokens_per_step, mtp_model

BIG = 1e18
LLAMA8B_PARAMS = 8_030_261_248
LLAMA8B_KV_PER_TOKEN = 32 * 2 * 8 * 128 * 2          # layers x (K, V) x kv heads x head_dim x bf16 bytes


@pytest.fixture(scope="module")
def h100():
    return engine.load_hardware("H100-SXM")


@pytest.fixture(scope="module")
def llama8b():
    return engine.load_model("meta-llama/Llama-3.1-8B")


@pytest.fixture(scope="module")
def llama70b():
    return engine.load_model("meta-llama/Llama-3.1-70B")


@pytest.mark.parametrize("k, a, expected", [
    (3, 0.7, 1 + 0.7 + 0.49 + 0.343),     # 1 + a + a^2 + a^3
    (1, 0.5, 1.5),
    (4, 0.0, 1.0),                        # nothing accepted: the bonus token only
    (4, 1.0, 5.0),                        # everything accepted: k + 1
    (2, 0.9, 1 + 0.9 + 0.81),
])
def test_expected_tokens_per_step_by_hand(k, a, expected):
    assert expected_tokens_per_step(k, a) == pytest.approx(expected, rel=1e-12)
    assert SpeculativeDecoding(mtp_layers=1, draft_tokens=k, acceptance_rate=a).tokens_per_step == \
        pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("rates, expected", [
    ((0.85, 0.3, 0.0), 1 + 0.85 + 0.85 * 0.3),        # aiconfigurator's DeepSeek MTP default, 3 drafted tokens
    ((0.85,), 1.85),
    ((0.5, 0.5), 1 + 0.5 + 0.25),                      # equal rates: the single-rate formula's E
    ((0.0, 1.0, 1.0), 1.0),                            # the first rejected: nothing after it counts
])
def test_per_position_acceptance_rates_by_hand(rates, expected):
    spec = SpeculativeDecoding(mtp_layers=1, draft_tokens=len(rates), acceptance_rates=rates, acceptance_rate=0.99)
    assert spec.tokens_per_step == pytest.approx(expected, rel=1e-12)      # the rates replace acceptance_rate
    assert "acceptance rates" in spec.describe()
    with pytest.raises(ValidationError, match="acceptance_rates: expected 3 rates"):
        SpeculativeDecoding(mtp_layers=1, draft_tokens=3, acceptance_rates=(0.8, 0.5))
    with pytest.raises(ValidationError, match="acceptance_rates"):
        SpeculativeDecoding(mtp_layers=1, draft_tokens=1, acceptance_rates=(1.2,))


def test_options_name_the_bad_field(llama8b):
    with pytest.raises(ValidationError, match="exactly one of draft_model"):
        SpeculativeDecoding(draft_tokens=2)
    with pytest.raises(ValidationError, match="exactly one of draft_model"):
        SpeculativeDecoding(draft_model=llama8b, mtp_layers=1)
    with pytest.raises(ValidationError, match="acceptance_rate"):
        SpeculativeDecoding(mtp_layers=1, acceptance_rate=1.5)
    with pytest.raises(ValidationError, match="draft_tokens"):
        SpeculativeDecoding(mtp_layers=1, draft_tokens=0)
    # a model id is read like engine.load_model, and the options dump the draft by name
    spec = SpeculativeDecoding(draft_model="meta-llama/Llama-3.1-8B", draft_tokens=2)
    assert spec.draft_model.num_layers == 32
    assert ServingOptions(speculative=spec).model_dump()["speculative"]["draft_model"] == "meta-llama/Llama-3.1-8B"
    # every decoding request takes k + 1 tokens of the iteration's budget: a max batch beyond budget / (k + 1) is
    # refused (as vLLM refuses max_num_seqs > max_num_batched_tokens), and so is a budget below k + 1
    mtp = SpeculativeDecoding(mtp_layers=1, draft_tokens=3)
    with pytest.raises(ValidationError, match="token_budget=128 is less than max_batch=64 .* lower max_batch to 32"):
        ServingOptions(concurrency=64, token_budget=128, max_batch=64, speculative=mtp)
    with pytest.raises(ValidationError, match="token_budget=3 is less than the 4 token"):
        ServingOptions(concurrency=1, token_budget=3, speculative=mtp)
    # without a max batch, 128 / 4 = 32 of the 64 clients decode at once and the others wait
    assert ServingOptions(concurrency=64, token_budget=128, speculative=mtp).batch_limit(64) == 32


def test_two_tokens_per_step_halve_the_decode_steps():
    # one client, 4-token prompt, 9 output tokens: the prompt's iteration yields token 1, then 8 more tokens
    plain = schedule(np.full(2, 4), np.full(2, 9), 1, 64, 1, BIG, np.ones(2))
    spec = schedule(np.full(2, 4), np.full(2, 9), 1, 64, 1, BIG, np.ones(2), tokens_per_step=2.0, verify_tokens=2)
    r_plain, r_spec = plain.requests, spec.requests
    assert r_plain["finish_iteration"][0] - r_plain["first_token_iteration"][0] == 8
    assert r_spec["finish_iteration"][0] - r_spec["first_token_iteration"][0] == 4
    # the cached context grows two tokens per step: 4, 6, 8, 10 before the four steps
    assert list(spec.segments[0].priors) == [4] and spec.segments[0].length == 4
    assert spec.decode_tokens()[1:5].sum() == 8


def test_fractional_tokens_per_step_round_up_the_steps():
    # E = 2.5: 8 tokens after the first need ceil(8 / 2.5) = 4 steps
    plan = schedule(np.full(2, 4), np.full(2, 9), 1, 64, 1, BIG, np.ones(2), tokens_per_step=2.5, verify_tokens=3)
    assert plan.requests["finish_iteration"][0] - plan.requests["first_token_iteration"][0] == 4


def test_one_client_by_hand_at_the_memory_roofline(h100, llama8b):
    # Llama-3.1-8B drafting for itself, k = 1, every draft accepted: per step one draft pass (1 token) and one
    # verification pass (2 tokens), both streaming every weight but the embedding table; E = 2 tokens per step
    isl, osl = 1000, 65
    spec = SpeculativeDecoding(draft_model=llama8b, draft_tokens=1, acceptance_rate=1.0)
    result = serve(h100, llama8b, concurrency=1, input_length=isl, output_length=osl, method="roofline",
                   speculative=spec)
    weights = 2 * (LLAMA8B_PARAMS - 128_256 * 4096)
    steps = np.arange((osl - 1) // 2)
    # step j starts with isl + 2j cached tokens: verification reads them and its 2 new ones, the draft 1 new one
    kv_read = (isl + 2 * steps + 2) + (isl + 2 * steps + 1)
    by_hand = (2 * weights * len(steps) + kv_read.sum() * LLAMA8B_KV_PER_TOKEN) / h100.memory_bandwidth_bytes_per_s
    assert result.tpot_s == pytest.approx(by_hand / (osl - 1), rel=0.005)
    # the draft's cost is counted: without it the step would take half as long
    plain = serve(h100, llama8b, concurrency=1, input_length=isl, output_length=osl, method="roofline")
    assert result.tpot_s > 0.9 * plain.tpot_s


def test_nothing_accepted_is_never_faster(h100, llama70b, llama8b):
    spec = SpeculativeDecoding(draft_model=llama8b, draft_tokens=3, acceptance_rate=0.0)
    for concurrency in (1, 32):
        fields = dict(concurrency=concurrency, input_length=512, output_length=64, tp=4, method="realistic")
        plain, drafted = serve(h100, llama70b, **fields), serve(h100, llama70b, speculative=spec, **fields)
        assert drafted.tpot_s > plain.tpot_s * 1.05           # the draft and the wider verification cost time
        assert drafted.tokens_per_s_per_device < plain.tokens_per_s_per_device


def test_gain_shrinks_as_the_batch_grows(h100, llama70b, llama8b):
    # at one client decode is memory-bound (verifying 4 tokens costs about what 1 does); at many clients the
    # target's passes carry more compute and the draft's passes weigh more: the gain falls
    spec = SpeculativeDecoding(draft_model=llama8b, draft_tokens=3, acceptance_rate=0.7)
    gains = []
    for concurrency in (1, 64):
        fields = dict(concurrency=concurrency, input_length=1024, output_length=128, tp=4, method="roofline")
        gains.append(serve(h100, llama70b, speculative=spec, **fields).tokens_per_s_per_device /
                     serve(h100, llama70b, **fields).tokens_per_s_per_device)
    assert gains[0] > 1.5 and gains[1] < gains[0] - 0.3


def test_littles_law_holds_with_speculation(h100, llama8b):
    spec = SpeculativeDecoding(mtp_layers=2, draft_tokens=2, acceptance_rate=0.6)
    result = serve(h100, llama8b, concurrency=8, input_length=256, output_length=96, method="roofline",
                   speculative=spec, warmup_requests=1, stagger_start=True, requests_per_client=12)
    assert result.requests_per_s == pytest.approx(8 / result.e2e_s, rel=0.05)


def test_kv_budget_loses_the_draft_weights_and_holds_its_cache(h100, llama8b):
    from engine.workload.parallel import parallel_layout
    from engine.serving.simulate import _draft
    from engine.workload.scenario import Scenario
    scenario = Scenario(phase="request", batch=1, input_length=1024, output_length=256)
    layout = parallel_layout(llama8b, scenario)
    spec = SpeculativeDecoding(draft_model=llama8b, draft_tokens=3, acceptance_rate=0.5)
    plain_room, plain_request = kv_budget(llama8b, scenario, h100, ServingOptions(), layout)
    room, per_request = kv_budget(llama8b, scenario, h100, ServingOptions(speculative=spec), layout,
                                  _draft(spec, llama8b, scenario))
    assert plain_room - room == pytest.approx(2 * LLAMA8B_PARAMS, rel=1e-9)      # the draft's bf16 weights
    assert plain_request(np.array([100]))[0] == pytest.approx(100 * LLAMA8B_KV_PER_TOKEN)
    # the target's cache for 100 + k tokens (a verification writes k beyond), the draft's for 100
    assert per_request(np.array([100]))[0] == pytest.approx((103 + 100) * LLAMA8B_KV_PER_TOKEN)


def test_mtp_layers_are_the_targets_last_layers():
    deepseek = engine.load_model("deepseek-ai/DeepSeek-V3")
    one = mtp_model(deepseek, 1)
    assert (one.num_layers, one.moe_layers, one.hidden_size) == (1, (True,), 7168)
    from engine.workload.parallel import parallel_layout
    from engine.workload.scenario import Scenario
    layout = parallel_layout(one, Scenario(tp=8))
    spec = SpeculativeDecoding(mtp_layers=1)
    # one MoE layer: 256 routed experts of 3 x 7168 x 2048 split over tp = 8 dominate, plus the replicated
    # [embedding, hidden] -> hidden projection (2 x 7168 x 7168), fp8: 1 byte each
    experts = 256 * 3 * 7168 * 2048 / 8
    projection = 2 * 7168 * 7168
    assert draft_weight_bytes(spec, one, layout, "fp8") == pytest.approx(experts + projection, rel=0.05)
    with pytest.raises(ValueError, match="mtp_layers=99"):
        mtp_model(deepseek, 99)


def test_draft_tp_one_puts_a_whole_draft_on_every_device(h100, llama8b):
    from engine.workload.parallel import parallel_layout
    from engine.serving.simulate import _draft
    from engine.workload.scenario import Scenario
    scenario = Scenario(phase="request", batch=1, input_length=1024, output_length=256, tp=2)
    layout = parallel_layout(llama8b, scenario)
    plain_room, _ = kv_budget(llama8b, scenario, h100, ServingOptions(), layout)
    whole = SpeculativeDecoding(draft_model=llama8b, draft_tp=1)
    split = SpeculativeDecoding(draft_model=llama8b)                  # the target's tp = 2
    room_whole, per_request = kv_budget(llama8b, scenario, h100, ServingOptions(speculative=whole), layout,
                                        _draft(whole, llama8b, scenario))
    room_split, _ = kv_budget(llama8b, scenario, h100, ServingOptions(speculative=split), layout,
                              _draft(split, llama8b, scenario))
    assert plain_room - room_whole == pytest.approx(2 * LLAMA8B_PARAMS, rel=1e-9)
    assert plain_room - room_split < 0.55 * (plain_room - room_whole)     # about half over two devices
    # the target's KV is split over tp = 2 (8 KV heads, 4 per device); the whole draft's is not
    assert per_request(np.array([100]))[0] == pytest.approx((103 / 2 + 100) * LLAMA8B_KV_PER_TOKEN)
    with pytest.raises(ValidationError, match="draft_tp applies to a draft model"):
        SpeculativeDecoding(mtp_layers=1, draft_tp=1)


def test_verification_of_an_mla_model_stays_in_the_absorbed_decode_form():
    # engines verify k + 1 tokens with their decode kernels (FlashMLA takes several queries per sequence):
    # the cached latent is read, never decompressed for the whole context as a prompt's naive form would
    from engine.decomposition.transformer import add_forward_pass
    from engine.kernels.table import KernelTableBuilder
    from engine.workload.parallel import parallel_layout
    from engine.serving.cost import grid_pass
    from engine.workload.scenario import Scenario
    deepseek = engine.load_model("deepseek-ai/DeepSeek-V3")
    scenario = Scenario(tp=8, weight_dtype="fp8")
    builder = KernelTableBuilder()
    add_forward_pass(builder, deepseek, scenario, grid_pass(np.array([4.0]), np.array([1000.0]), decode_tokens=3),
                     parallel_layout(deepseek, scenario))
    names = set(builder.build_columns()["name"])
    assert any("Q*W_UK" in name for name in names)
    assert not any("KV_b*W" in name for name in names)
