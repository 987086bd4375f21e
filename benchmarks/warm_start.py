"""Warm start: time to first output and whole-process time of a torch.compile job in a fresh
process, nine ways.

Columns (one fresh process per measurement, each with its own empty TORCHINDUCTOR_CACHE_DIR
unless said otherwise):
  eager                no torch.compile;
  cold                 torch.compile, empty Inductor cache;
  warm                 PyTorch's warm local caches: a copy, made before each run, of the cache
                       directory an earlier untimed cold run of the same job filled;
  mega                 torch.compiler.load_cache_artifacts of the bytes save_cache_artifacts()
                       returned in an earlier untimed run;
  precompile           the same with torch._dynamo.config.caching_precompile and
                       torch._functorch.config.bundled_autograd_cache on, in both runs;
  replay               dynamo_replay.replay(store, verbose=False), entered before torch.compile,
                       of a store captured untimed with dynamo_replay.capture(store) (precompile
                       on, the default);
  replay-noprecompile  the same with a store captured with capture(store, precompile=False);
  pt-precompile        PyTorch 2.15's torch.compiler.precompile (prototype): the untimed run calls
                       the model through capture(fn, artifact_path=, cache_path=) (one non-strict
                       make_fx trace per call, shapes static, no guards), the timed run through
                       load(artifact, cache);
  aot-compile          torch.compile(fn, fullgraph=True).aot_compile(((args), {kwargs})) and
                       save_compiled_function(path) untimed; load_compiled_function(file) timed.
A column that fails (PyTorch's precompile fails some jobs) is reported as failed, with the last
line of the child's stderr, and the others go on.

The two ahead-of-time columns call the model as those APIs require (AheadOfTime in the child):
fn(model, *inputs), the model an argument so its weights are inputs and not constants; a
transformers output cut to its tensor fields (Fields: read by name, attribute or position); one
artifact per input signature, chosen by the caller (pt-precompile has no guards: by shapes;
aot-compile: the first whose guards accept the call, since a rejected call raises instead of
compiling); for aot-compile, a guard_filter_fn that drops what its default drops and also guards
whose derived kind cannot be saved. Where the path still cannot run the job (a graph break, a
trace that reads a tensor's value, an optimizer step inside fn), the untimed run says so and the
column reads "n/a: " and the exception's first line. CHANGES says, per workload, what a user has
to change in the job for each path; it is printed with the table.

The script times each child from spawn until it prints after its first output, and until it
exits. Columns alternate within each round; medians (with min and max) are reported. Overhead
is a column's time minus eager's. Each replay child compares its first output with the
captured run's (torch.equal, bitwise) and reports whether replay loaded and what compiled
anyway; a mismatch or a refused store is reported loudly and makes the exit status 1. Each
ahead-of-time child compares its first output with its untimed run's (torch.equal, bitwise) and
with a cold torch.compile's in a fresh process (saved by the untimed run that fills the warm
cache): close when max |out - cold| <= 1e-4 * max |cold|, since make_fx and Dynamo may hand
Inductor different graphs; a miss is marked in the table.

Workloads: models built from `transformers` configs with random weights, nothing downloaded
(attention: attn_implementation="sdpa", transformers' default, pinned):
  gpt2        GPT2LMHeadModel(GPT2Config()), 124M, eval, no_grad, input_ids (2, 64) then (2, 128);
  bert        BertModel(BertConfig()), bert-base, the same two calls;
  gpt2-train  GPT2LMHeadModel(GPT2Config(n_layer=2)) with AdamW: torch.compile(step), where step
              does forward with labels, backward, optimizer.step(), zero_grad(); 2 steps at (2, 64);
  t5          T5ForConditionalGeneration, 4+4 layers, d_model 512: input (2, 64) then (2, 160),
              decoder input half as long;
  llama       LlamaForCausalLM, 6 layers, hidden 512, 8 heads over 2 key-value heads (grouped-query
              attention, rotary embeddings, RMSNorm): input_ids (2, 64) then (2, 128);
  vit         ViTModel, 6 layers, 160 px images: batch 1 then 3;
  llama-train LlamaForCausalLM, 2 layers, hidden 256, with SGD and momentum: torch.compile(step), 2 steps;
  bert-train  BertForSequenceClassification, 4 layers, with AdamW (tensor lr): the model compiled and
              the optimizer's step compiled on its own, 2 steps at (4, 64), one thread (with two,
              two plain compiled runs differ in the last bits);
  vit-train   ViTForImageClassification, 4 layers, 96 px, with SGD and momentum: torch.compile(step), 2 steps;
--workloads training runs gpt2-train, llama-train, bert-train and vit-train;
the held-out set (issue 35; --workloads held-out): mistral, mixtral, gemma2, whisper, resnet,
t5-small and gpt2-dynamic, models in no other benchmark or test, for which the target is every
frame saved and used at replay, at most 5% of cold where cold is over 20 s and at least 3x below
the warm caches; and the small models of capture_overhead.py (gpt, convnet, train). After the
timings, a table gives every workload's frames under replay: saved, run from the store, refused
at install and not saved, with the reasons. The first output is the
output of the last of these calls. The child seeds PyTorch before building the model: 2.15 no
longer starts every process from the same seed, and the small models build without one.

Run:
  .venv-2.15.0/bin/python benchmarks/warm_start.py [--repeat 3] [--workloads gpt2 bert gpt2-train] [--json FILE]
  .venv-2.15.0/bin/python benchmarks/warm_start.py --profile-replay [cprofile|importtime] --workloads gpt2
  .venv-2.15.0/bin/python benchmarks/warm_start.py --columns cold warm replay pt-precompile aot-compile --workloads gpt2
Target (issue 10): dynamo-replay's overhead (default capture) is at most 5% of cold compile's,
and lower than every PyTorch column, on every real model.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from capture_overhead import WORKLOADS as MODELS  # noqa: E402  (the same GPT-style model and convnet)

# Each workload defines `model` (what torch.compile wraps), `dynamic` (torch.compile's argument)
# and first_output(fn) -> tensor, where fn is the model or its compiled form: what the job does
# before it has its first result. Inputs are seeded, so every run computes the same thing.
_TWO_SHAPES = """
        dynamic = None
        def first_output(fn):
            generator = torch.Generator().manual_seed(0)
            with torch.no_grad():
                outputs = [fn(torch.randint(0, 1000, (2, n), generator=generator)) for n in (64, 128)]
            return outputs[-1][0]  # logits (gpt2), last hidden state (bert)
"""


def _images(size: int, batches: tuple[int, ...], field: str) -> str:
    """first_output for a vision model: square RGB images at each batch size, the last call's field."""
    return f"""
        dynamic = None
        def first_output(fn):
            generator = torch.Generator().manual_seed(0)
            with torch.no_grad():
                outputs = [fn(torch.randn(n, 3, {size}, {size}, generator=generator)) for n in {batches}]
            return outputs[-1].{field}
"""


# A training step over `net` and `optimizer`, compiled whole, two steps at (2, 64).
_TRAINING_STEP = """
        def model(input_ids):  # the training step; torch.compile(step)
            loss = net(input_ids, labels=input_ids).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            return loss.detach()
        dynamic = None
        def first_output(fn):
            generator = torch.Generator().manual_seed(0)
            return [fn(torch.randint(0, 1000, (2, 64), generator=generator)) for _ in range(2)][-1]
"""
WORKLOADS = {
    "gpt2": """
        from transformers import GPT2Config, GPT2LMHeadModel
        torch.manual_seed(0)
        model = GPT2LMHeadModel(GPT2Config(attn_implementation="sdpa")).eval()  # 124M
"""
    + _TWO_SHAPES,
    "bert": """
        from transformers import BertConfig, BertModel
        torch.manual_seed(0)
        model = BertModel(BertConfig(attn_implementation="sdpa")).eval()  # bert-base
"""
    + _TWO_SHAPES,
    "gpt2-train": """
        from transformers import GPT2Config, GPT2LMHeadModel
        torch.manual_seed(0)
        net = GPT2LMHeadModel(GPT2Config(n_layer=2, attn_implementation="sdpa"))  # train mode: dropout on
        optimizer = torch.optim.AdamW(net.parameters(), lr=1e-4)
"""
    + _TRAINING_STEP,
    "gpt": MODELS["gpt"]
    + """
        dynamic = True
        def first_output(fn):
            with torch.no_grad():
                return fn(torch.randint(0, 100, (2, 16), generator=torch.Generator().manual_seed(0)))
    """,
    "convnet": MODELS["convnet"]
    + """
        dynamic = None
        def first_output(fn):
            with torch.no_grad():
                return fn(torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(0)))
    """,
    "train": """
        model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        dynamic = None
        def first_output(fn):
            g = torch.Generator().manual_seed(0)
            x, y = torch.randn(32, 64, generator=g), torch.randint(0, 10, (32,), generator=g)
            loss = torch.nn.functional.cross_entropy(fn(x), y)
            loss.backward()
            optimizer.step()
            return loss.detach()
    """,
}
# Issue 21's models: an encoder-decoder, a GQA/rotary/RMSNorm decoder, a vision transformer and a
# training step with momentum, each called at two shapes (the second recompiles, or runs dynamic).
WORKLOADS.update(
    {
        "t5": """
        from transformers import T5Config, T5ForConditionalGeneration
        torch.manual_seed(0)
        model = T5ForConditionalGeneration(T5Config(d_model=512, d_ff=2048, num_layers=4, num_decoder_layers=4,
                                                    num_heads=8, attn_implementation="sdpa")).eval()
        dynamic = None
        def first_output(fn):
            generator = torch.Generator().manual_seed(0)
            with torch.no_grad():
                outputs = [fn(input_ids=torch.randint(0, 1000, (2, n), generator=generator),
                              decoder_input_ids=torch.randint(0, 1000, (2, n // 2), generator=generator))
                           for n in (64, 160)]
            return outputs[-1].logits
    """,
        "llama": """
        from transformers import LlamaConfig, LlamaForCausalLM
        torch.manual_seed(0)
        model = LlamaForCausalLM(LlamaConfig(hidden_size=512, intermediate_size=1376, num_hidden_layers=6,
                                             num_attention_heads=8, num_key_value_heads=2, vocab_size=32000,
                                             attn_implementation="sdpa")).eval()
"""
        + _TWO_SHAPES,
        "vit": """
        from transformers import ViTConfig, ViTModel
        torch.manual_seed(0)
        model = ViTModel(ViTConfig(num_hidden_layers=6, image_size=160, attn_implementation="sdpa")).eval()
"""
        + _images(160, (1, 3), "last_hidden_state"),
        "llama-train": """
        from transformers import LlamaConfig, LlamaForCausalLM
        torch.manual_seed(0)
        net = LlamaForCausalLM(LlamaConfig(hidden_size=256, intermediate_size=688, num_hidden_layers=2,
                                           num_attention_heads=8, num_key_value_heads=2, vocab_size=32000,
                                           attn_implementation="sdpa"))
        optimizer = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9)
"""
        + _TRAINING_STEP,
    }
)
REAL_WORKLOADS = ["gpt2", "bert", "gpt2-train", "t5", "llama", "vit", "llama-train"]
# Issue 43's training steps, one per way of compiling training that gpt2-train (the whole step)
# does not cover: the model compiled and AdamW's step compiled on its own (PyTorch's compiled-
# optimizer recipe, a tensor lr, as a scheduler wants), and a ViT whose whole step with SGD and
# momentum is one compiled function. Two steps each; the first output is the second step's loss.
WORKLOADS.update(
    {
        "bert-train": """
        from transformers import BertConfig, BertForSequenceClassification
        torch.set_num_threads(1)  # with two, BERT's training step is not bitwise reproducible, compiled or not
        torch.manual_seed(0)
        model = BertForSequenceClassification(BertConfig(num_hidden_layers=4, attn_implementation="sdpa"))
        optimizer = torch.optim.AdamW(model.parameters(), lr=torch.tensor(2e-5))
        def optimizer_step():
            optimizer.step()
            optimizer.zero_grad()
        dynamic = None
        def first_output(fn):
            # Compiled here, as the model is: capture and replay are entered after the workload is built.
            step = optimizer_step if fn is model else torch.compile(optimizer_step)
            generator = torch.Generator().manual_seed(0)
            for _ in range(2):
                ids = torch.randint(0, 1000, (4, 64), generator=generator)
                loss = fn(ids, labels=torch.randint(0, 2, (4,), generator=generator)).loss
                loss.backward()
                step()
            return loss.detach()
""",
        "vit-train": """
        from transformers import ViTConfig, ViTForImageClassification
        torch.manual_seed(0)
        net = ViTForImageClassification(ViTConfig(num_hidden_layers=4, image_size=96, num_labels=10,
                                                  attn_implementation="sdpa"))
        optimizer = torch.optim.SGD(net.parameters(), lr=1e-3, momentum=0.9)
        def model(images, labels):  # the whole step; torch.compile(step)
            loss = net(images, labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            return loss.detach()
        dynamic = None
        def first_output(fn):
            generator = torch.Generator().manual_seed(0)
            steps = [(torch.randn(4, 3, 96, 96, generator=generator), torch.randint(0, 10, (4,), generator=generator))
                     for _ in range(2)]
            return [fn(images, labels) for images, labels in steps][-1]
""",
    }
)
TRAINING_WORKLOADS = ["gpt2-train", "llama-train", "bert-train", "vit-train"]

# Issue 35's held-out models, in no other benchmark or test: a sliding-window decoder, a mixture of
# experts, a decoder with soft-capped logits and alternating sliding windows, a speech encoder-decoder
# whose config is a validated dataclass setting fields inside forward, a convnet, T5 at its default
# (t5-small) size, and GPT-2 compiled dynamic=True over three lengths.
_THREE_LENGTHS = """
        dynamic = None
        def first_output(fn):
            generator = torch.Generator().manual_seed(0)
            with torch.no_grad():
                outputs = [fn(torch.randint(0, 1000, (2, n), generator=generator)) for n in (32, 64, 96)]
            return outputs[-1][0]
"""
WORKLOADS.update(
    {
        "mistral": """
        from transformers import MistralConfig, MistralForCausalLM
        torch.manual_seed(0)
        model = MistralForCausalLM(MistralConfig(hidden_size=512, intermediate_size=1376, num_hidden_layers=6,
                                                 num_attention_heads=8, num_key_value_heads=2, vocab_size=32000,
                                                 sliding_window=48, attn_implementation="sdpa")).eval()
"""
        + _TWO_SHAPES,
        "mixtral": """
        from transformers import MixtralConfig, MixtralForCausalLM
        torch.manual_seed(0)
        model = MixtralForCausalLM(MixtralConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                                                 num_attention_heads=8, num_key_value_heads=2, vocab_size=32000,
                                                 num_local_experts=4, num_experts_per_tok=2,
                                                 attn_implementation="sdpa")).eval()
"""
        + _TWO_SHAPES,
        "gemma2": """
        from transformers import Gemma2Config, Gemma2ForCausalLM
        torch.manual_seed(0)
        model = Gemma2ForCausalLM(Gemma2Config(hidden_size=256, intermediate_size=1024, num_hidden_layers=6,
                                               num_attention_heads=4, num_key_value_heads=2, head_dim=64,
                                               vocab_size=32000, sliding_window=48,
                                               attn_implementation="eager")).eval()  # soft-capping: no sdpa
"""
        + _TWO_SHAPES,
        "whisper": """
        from transformers import WhisperConfig, WhisperForConditionalGeneration
        torch.manual_seed(0)
        model = WhisperForConditionalGeneration(WhisperConfig(
            d_model=256, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
            encoder_ffn_dim=1024, decoder_ffn_dim=1024, num_mel_bins=80, max_source_positions=200,
            max_target_positions=64, attn_implementation="sdpa")).eval()
        dynamic = None
        def first_output(fn):
            generator = torch.Generator().manual_seed(0)
            with torch.no_grad():
                outputs = [fn(input_features=torch.randn(n, 80, 400, generator=generator),
                              decoder_input_ids=torch.randint(0, 1000, (n, 16), generator=generator))
                           for n in (1, 2)]
            return outputs[-1].logits
    """,
        "resnet": """
        from transformers import ResNetConfig, ResNetForImageClassification
        torch.manual_seed(0)
        model = ResNetForImageClassification(ResNetConfig()).eval()  # ResNet-50
"""
        + _images(128, (1, 2), "logits"),
        "t5-small": """
        from transformers import T5Config, T5ForConditionalGeneration
        torch.manual_seed(0)
        model = T5ForConditionalGeneration(T5Config(attn_implementation="sdpa")).eval()  # t5-small, 6+6 layers
        dynamic = None
        def first_output(fn):
            generator = torch.Generator().manual_seed(0)
            with torch.no_grad():
                outputs = [fn(input_ids=torch.randint(0, 1000, (2, n), generator=generator),
                              decoder_input_ids=torch.randint(0, 1000, (2, 8), generator=generator))
                           for n in (48, 96)]
            return outputs[-1].logits
    """,
        "gpt2-dynamic": """
        from transformers import GPT2Config, GPT2LMHeadModel
        torch.manual_seed(0)
        model = GPT2LMHeadModel(GPT2Config(attn_implementation="sdpa")).eval()  # 124M
"""
        + _THREE_LENGTHS.replace("dynamic = None", "dynamic = True"),
    }
)
HELD_OUT_WORKLOADS = ["mistral", "mixtral", "gemma2", "whisper", "resnet", "t5-small", "gpt2-dynamic"]
WORKLOAD_SETS = {"real": REAL_WORKLOADS, "held-out": HELD_OUT_WORKLOADS, "training": TRAINING_WORKLOADS}

# The job behind PyTorch 2.15's ahead-of-time paths, called as their APIs require (see the
# docstring); the child defines it after the workload, which defines `model`.
AHEAD_OF_TIME = """
import json as _json
from pathlib import Path as _Path

class Fields(dict):
    # A transformers output cut to its tensor fields: read by name, attribute or position, like
    # the ModelOutput it stands for.
    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None
    def __getitem__(self, key):
        return list(self.values())[key] if isinstance(key, int) else dict.__getitem__(self, key)

def tensor_fields(out):
    return {k: v for k, v in out.items() if isinstance(v, torch.Tensor)} if isinstance(out, dict) else out

def call_for_aot_compile(model, *args, **kwargs):
    return tensor_fields(model(*args, **kwargs))

def call_for_precompile(names):  # precompile takes positional arguments only: keywords bound here by name
    def call(model, *values):
        split = len(values) - len(names)
        return tensor_fields(model(*values[:split], **dict(zip(names, values[split:]))))
    return call

def serializable_guards(entries):
    # aot_compile's default filter (no guard on a global, none of a kind it cannot save), applied to
    # each guard's derived kinds too: the default looks at the guard's own kind only, and transformers'
    # decorators give a CONSTANT_MATCH that derives an ID_MATCH, which saving then refuses.
    from torch._dynamo.guards import CheckFunctionManager
    unsaveable = set(CheckFunctionManager.UNSUPPORTED_SERIALIZATION_GUARD_TYPES)
    return [not (e.is_global or e.guard_type in unsaveable or unsaveable & set(e.derived_guard_types))
            for e in entries]

def signature(args, kwargs):
    return repr([(tuple(v.shape), str(v.dtype)) if isinstance(v, torch.Tensor) else repr(v)
                 for v in (*args, *kwargs.values())] + list(kwargs))

class AheadOfTime:
    # `model` behind one ahead-of-time path. Preparing (untimed), a call that no artifact covers
    # makes one, saves it and loads it back; timed, every saved artifact is loaded up front and each
    # call goes to the first that covers it.
    def __init__(self, path, directory, prepare):
        self.path, self.directory = path, _Path(directory)
        self.index = [] if prepare else _json.loads((self.directory / "index.json").read_text())
        self.prepare = prepare
        self.loaded = [self.load(entry) for entry in self.index]

    def load(self, entry):
        if self.path == "pt-precompile":
            return torch.compiler.precompile.load(self.directory / entry["code"], self.directory / entry["cache"])
        with open(self.directory / entry["file"], "rb") as file:
            return torch.compiler.load_compiled_function(file)

    def covers(self, i, args, kwargs):
        if self.path == "pt-precompile":  # no guards: the caller keys artifacts by input shapes
            return self.index[i]["signature"] == signature(args, kwargs)
        return self.loaded[i].guard_check(model, *args, **kwargs)

    def __call__(self, *args, **kwargs):
        for i, artifact in enumerate(self.loaded):
            if self.covers(i, args, kwargs):
                return self.run(artifact, args, kwargs)
        if not self.prepare:
            raise RuntimeError(f"{self.path}: no saved artifact covers this call: {signature(args, kwargs)}")
        self.make(args, kwargs)
        return self.run(self.loaded[-1], args, kwargs)

    def run(self, artifact, args, kwargs):
        if self.path == "pt-precompile":
            out = artifact(model, *args, *kwargs.values())
        else:
            out = artifact(model, *args, **kwargs)
        return Fields(out) if isinstance(out, dict) else out

    def make(self, args, kwargs):
        n = len(self.index)
        if self.path == "pt-precompile":
            entry = {"code": f"{n}.py", "cache": f"{n}.cache", "signature": signature(args, kwargs)}
            with torch.compiler.precompile.capture(call_for_precompile(tuple(kwargs)),
                                                   artifact_path=self.directory / entry["code"],
                                                   cache_path=self.directory / entry["cache"]) as capture:
                capture(model, *args, *kwargs.values())
        else:
            entry = {"file": f"{n}.aot"}
            compiled = torch.compile(call_for_aot_compile, fullgraph=True, dynamic=dynamic,
                                     options={"guard_filter_fn": serializable_guards})
            compiled.aot_compile(((model, *args), kwargs)).save_compiled_function(str(self.directory / entry["file"]))
        self.index.append(entry)
        self.loaded.append(self.load(entry))  # what the timed run will load, checked here

    def save_index(self):
        (self.directory / "index.json").write_text(_json.dumps(self.index, indent=1))
"""

# The child: argv is mode and artifact (a store, a Mega-Cache file, an ahead-of-time artifact
# directory, or unused). It prints MARK lines with wall-clock times (so the parent can split the
# time up), FIRST_OUTPUT as soon as the job has its first result, for replay modes whether that
# result is bitwise the captured run's and what replay did, and for the ahead-of-time modes
# whether it is bitwise their untimed run's and how close to a cold compile's
# (WARM_START_REFERENCE). An untimed ahead-of-time run the path cannot do prints NOT_APPLICABLE
# and the exception's first line. WARM_START_PROFILE=path profiles it up to the first output.
CHILD = """
import os, sys, time
_profile = os.environ.get("WARM_START_PROFILE")
if _profile:
    import cProfile
    _profiler = cProfile.Profile()
    _profiler.enable()
mode, artifact = sys.argv[1], sys.argv[2]
import torch
print("MARK imported", time.time(), flush=True)
torch.manual_seed(0)  # PyTorch 2.15 seeds each process differently: workloads that build without a seed too
@@WORKLOAD@@
@@AHEAD_OF_TIME@@
print("MARK built", time.time(), flush=True)
torch.manual_seed(0)
aot_path = mode.removeprefix("prepare-") if mode.removeprefix("prepare-") in ("pt-precompile", "aot-compile") else None
if mode in ("precompile", "save-precompile"):
    torch._dynamo.config.caching_precompile = True
    torch._functorch.config.bundled_autograd_cache = True
if mode in ("mega", "precompile"):
    with open(artifact, "rb") as file:
        torch.compiler.load_cache_artifacts(file.read())
session = None
if mode.startswith("replay"):
    import dynamo_replay
    session = dynamo_replay.replay(artifact, verbose=False).__enter__()
if mode.startswith("capture"):
    import dynamo_replay
    session = dynamo_replay.capture(artifact, precompile=mode == "capture").__enter__()
if aot_path:
    if mode.startswith("prepare-"):
        os.makedirs(artifact, exist_ok=True)
    fn = AheadOfTime(aot_path, artifact, prepare=mode.startswith("prepare-"))  # timed: loads every artifact
print("MARK entered", time.time(), flush=True)
if not aot_path:
    fn = model if mode == "eager" else torch.compile(model, dynamic=dynamic)
if mode.startswith("prepare-"):
    try:
        out = first_output(fn)
    except Exception as error:
        import traceback
        first = (str(error).strip().splitlines() or [""])[0]
        if not first:  # a bare exception: say where it came from
            where = traceback.extract_tb(error.__traceback__)[-1]
            first = f"(no message; raised at {os.path.basename(where.filename)}:{where.lineno} in {where.name})"
        print("NOT_APPLICABLE", f"{type(error).__module__}.{type(error).__qualname__}: {first}"[:300], flush=True)
        traceback.print_exc()
        sys.exit(0)
    fn.save_index()
else:
    out = first_output(fn)
if _profile:
    _profiler.disable()
print("FIRST_OUTPUT", time.time(), flush=True)
if _profile:
    _profiler.dump_stats(_profile)
if mode.startswith("capture"):
    torch.save(out, artifact + ".out")
if mode == "cold-reference":
    torch.save(out, artifact)
if mode.startswith("prepare-"):
    torch.save(out, os.path.join(artifact, "output.pt"))
if aot_path and not mode.startswith("prepare-"):
    expected = torch.load(os.path.join(artifact, "output.pt"))
    equal = torch.equal(out, expected)
    detail = "" if equal else (f"shape {tuple(out.shape)} vs {tuple(expected.shape)}" if out.shape != expected.shape
                               else f"max abs diff {(out.double() - expected.double()).abs().max().item():.3g}")
    print("BITWISE_EQUAL", equal, detail, flush=True)
    cold = torch.load(os.environ["WARM_START_REFERENCE"])
    if out.shape != cold.shape:
        print("REFERENCE False", f"shape {tuple(out.shape)} vs cold compile's {tuple(cold.shape)}", flush=True)
    else:
        scale = max(cold.double().abs().max().item(), 1e-30)
        relative = (out.double() - cold.double()).abs().max().item() / scale
        print("REFERENCE", relative <= 1e-4, f"{relative:.2g}", flush=True)
if mode.startswith("replay"):
    import json
    expected = torch.load(artifact + ".out")
    equal = torch.equal(out, expected)
    detail = "" if equal else (f"shape {tuple(out.shape)} vs {tuple(expected.shape)}" if out.shape != expected.shape
                               else f"max abs diff {(out.double() - expected.double()).abs().max().item():.3g}")
    print("BITWISE_EQUAL", equal, detail, flush=True)
    summary = session.summary
    print("REPLAY_SUMMARY", json.dumps({
        "loaded": summary.loaded, "refused": summary.refused, "precompiled": summary.precompiled,
        "entries_installed": summary.entries_installed, "kernel_libraries": summary.kernel_libraries,
        "compiled": [str(frame) for frame in summary.compiled], "skipped": summary.skipped,
        "not_packaged": summary.not_packaged, "saved_frames": summary.saved_frames,
        "unused_frames": summary.unused_frames, "import_s": summary.import_seconds,
        "load_s": summary.load_seconds, "install_s": summary.install_seconds}, default=str), flush=True)
if mode.startswith("save-"):
    with open(artifact, "wb") as file:
        file.write(torch.compiler.save_cache_artifacts()[0])
if session is not None:
    session.__exit__(None, None, None)
"""

COLUMNS = [
    "eager",
    "cold",
    "warm",
    "mega",
    "precompile",
    "replay",
    "replay-noprecompile",
    "pt-precompile",
    "aot-compile",
]
TITLES = {
    "eager": "eager (no compile)",
    "cold": "cold compile",
    "warm": "PyTorch warm local caches",
    "mega": "PyTorch Mega-Cache",
    "precompile": "PyTorch precompile + Mega-Cache",
    "replay": "dynamo-replay",
    "replay-noprecompile": "dynamo-replay, precompile=False capture",
    "pt-precompile": "torch.compiler.precompile (2.15)",
    "aot-compile": "torch.compile().aot_compile (2.15)",
}
PYTORCH_COLUMNS = ("cold", "warm", "mega", "precompile")
REPLAY_COLUMNS = ("replay", "replay-noprecompile")
AOT_COLUMNS = ("pt-precompile", "aot-compile")  # PyTorch 2.15's ahead-of-time paths; compared with replay too
# What each column needs made beforehand (untimed): the child mode that makes it. The run that fills
# the warm cache also saves a cold compile's first output, the ahead-of-time columns' reference.
PREPARE = {
    "warm": "cold-reference",
    "mega": "save-mega",
    "precompile": "save-precompile",
    "replay": "capture",
    "replay-noprecompile": "capture-noprecompile",
    "pt-precompile": "prepare-pt-precompile",
    "aot-compile": "prepare-aot-compile",
}

# What a user has to change in a job to use each path: CHANGES[column], then what a workload adds
# (WORKLOAD_CHANGES[workload, column]). Printed with each workload's table; whether the path then
# ran is measured (a column reads n/a with the exception where it did not).
_AOT_TRAINING = (
    "the optimizer step has to leave fn: {why}; and the step's model passed to fn as an argument, not closed over"
)
CHANGES = {
    "warm": "nothing; the Inductor cache directory has to survive (or be copied) between processes",
    "mega": "torch.compiler.save_cache_artifacts() after the first compiled calls, load_cache_artifacts(bytes) "
    "before them in the next process",
    "precompile": "as Mega-Cache, with torch._dynamo.config.caching_precompile = True before torch.compile",
    "replay": "nothing in the code: run it once under `python -m dynamo_replay capture -o STORE`, then under "
    "`... replay STORE`",
    "replay-noprecompile": "as dynamo-replay, captured with --no-precompile",
    "pt-precompile": "a function fn(model, *inputs) called through precompile.capture / load, inputs positional; "
    "tensors out only (a transformers output cut to its tensor fields); one artifact per input "
    "shape (shapes static; mark_unbacked for a dynamic dim); every tensor fn reads a parameter, "
    "buffer or argument; Python control flow and constants frozen at capture, with no guard",
    "aot-compile": "a function fn(model, *args, **kwargs) compiled with fullgraph=True (no graph break), the model "
    "an argument; tensors out only (the saved bytecode cannot rebuild a transformers output: it names "
    "a module by a per-process id); a guard_filter_fn that also drops derived unsaveable guards; one "
    "artifact per input shape (unless dynamic), dispatched by the caller: a call the guards reject "
    "raises, it never recompiles; globals are not guarded by the default filter",
}
WORKLOAD_CHANGES = {
    ("gpt2", "pt-precompile"): "transformers' causal mask reads tensor values (padding_mask.all(), the packed-"
    "sequence check) unless torch.compile is tracing, and use_cache=True builds a "
    "DynamicCache from tensor constants: not capturable without changing transformers",
    ("llama", "pt-precompile"): "the causal mask and DynamicCache as for GPT-2",
    ("t5", "pt-precompile"): "keyword inputs passed positionally; the causal decoder mask and the cache as for GPT-2",
    ("gpt2-train", "pt-precompile"): _AOT_TRAINING.format(why="precompile refuses a parameter updated in place"),
    ("llama-train", "pt-precompile"): _AOT_TRAINING.format(why="precompile refuses a parameter updated in place"),
    ("gpt2-train", "aot-compile"): _AOT_TRAINING.format(why="loss.backward() breaks the graph"),
    ("llama-train", "aot-compile"): _AOT_TRAINING.format(why="loss.backward() breaks the graph"),
    ("train", "pt-precompile"): "backward() outside fn needs the artifact's output to carry autograd history; "
    "capture the whole step (forward, loss, backward) in fn instead",
    ("gpt", "pt-precompile"): "the job's dynamic=True has no counterpart without mark_unbacked: one artifact per shape",
    ("gpt", "aot-compile"): "the job's dynamic=True: a float from a symbolic size makes Dynamo restart to "
    "tensorify it, and aot_compile lets the restart escape "
    "(TensorifyScalarRestartAnalysis); compiled with static shapes, one artifact per "
    "shape, it runs",
}


class ChildFailed(RuntimeError):
    def __init__(self, mode: str, returncode: int | None, stderr: str) -> None:
        lines = [line for line in stderr.strip().splitlines() if line.strip()]
        self.last_line = lines[-1].strip() if lines else f"exit status {returncode}, no stderr"
        self.stderr_tail = stderr[-4000:]
        super().__init__(f"{mode} failed (exit status {returncode}): {self.last_line}")


def loud(message: str) -> None:
    bar = "!" * 78
    print(f"\n{bar}\n{message}\n{bar}\n", file=sys.stderr, flush=True)


def run_child(
    script: Path,
    mode: str,
    artifact: Path,
    cache: Path,
    *,
    python_flags: tuple[str, ...] = (),
    extra_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Runs one child; returns seconds from spawn to its first output and to its exit, the
    phases it marked, and for replay modes its bitwise check and replay summary."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache), **(extra_env or {})}
    for name in ("DYNAMO_REPLAY", "TORCH_LOGS", "TORCH_COMPILE_DEBUG"):
        env.pop(name, None)
    result: dict[str, Any] = {
        "first": None,
        "marks": {},
        "equal": None,
        "detail": "",
        "summary": None,
        "reference": None,
        "not_applicable": None,
    }
    with tempfile.TemporaryFile("w+") as stderr_file:  # a file, not a pipe: a chatty child cannot block
        spawn_wall = time.time()
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, *python_flags, str(script), mode, str(artifact)],
            stdout=subprocess.PIPE,
            stderr=stderr_file,
            text=True,
            env=env,
        )
        assert child.stdout is not None
        for line in child.stdout:
            if line.startswith("FIRST_OUTPUT") and result["first"] is None:
                result["first"] = time.perf_counter() - start
                result["marks"]["first"] = float(line.split()[1]) - spawn_wall
            elif line.startswith("MARK"):
                _, name, stamp = line.split()
                result["marks"][name] = float(stamp) - spawn_wall
            elif line.startswith("BITWISE_EQUAL"):
                fields = line.split(maxsplit=2)
                result["equal"] = fields[1] == "True"
                result["detail"] = fields[2].strip() if len(fields) > 2 else ""
            elif line.startswith("REPLAY_SUMMARY"):
                result["summary"] = json.loads(line.split(maxsplit=1)[1])
            elif line.startswith("REFERENCE"):
                fields = line.split(maxsplit=2)
                result["reference"] = {"close": fields[1] == "True", "detail": fields[2].strip()}
            elif line.startswith("NOT_APPLICABLE"):
                result["not_applicable"] = line.split(maxsplit=1)[1].strip()
        returncode = child.wait()
        result["whole"] = time.perf_counter() - start
        stderr_file.seek(0)
        result["stderr"] = stderr_file.read()
    if returncode != 0 or (result["first"] is None and result["not_applicable"] is None):
        raise ChildFailed(mode, returncode, result["stderr"])
    return result


class Bench:
    def __init__(self, name: str, work: Path, reuse: bool = False) -> None:
        self.name = name
        self.reuse = reuse
        self.work = work / name
        self.work.mkdir(parents=True, exist_ok=True)
        self.script = self.work / "child.py"
        self.script.write_text(
            CHILD.replace("@@WORKLOAD@@", textwrap.dedent(WORKLOADS[name])).replace("@@AHEAD_OF_TIME@@", AHEAD_OF_TIME)
        )
        self.warm_cache = self.work / "warm-cache"  # filled by an untimed cold run; each warm run gets a copy
        self.artifacts = {
            "mega": self.work / "mega.bin",
            "precompile": self.work / "precompile.bin",
            "replay": self.work / "default.dynrep",
            "replay-noprecompile": self.work / "noprecompile.dynrep",
            "warm": self.work / "cold-output.pt",  # the cold compile's first output
            "pt-precompile": self.work / "pt-precompile",
            "aot-compile": self.work / "aot-compile",
        }
        self.failed: dict[str, str] = {}  # column -> last line of the child's stderr
        self.errors: dict[str, str] = {}  # column -> the end of the child's stderr
        self.not_applicable: dict[str, str] = {}  # column -> why its path cannot run this job, as its untimed run found

    def fresh(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="cache-", dir=self.work))

    def fail(self, column: str, error: ChildFailed, what: str) -> None:
        self.failed[column] = f"{what}: {error.last_line}"
        self.errors[column] = error.stderr_tail
        print(f"[{self.name}] {TITLES[column]}: {what} failed: {error.last_line}", file=sys.stderr, flush=True)
        if column in REPLAY_COLUMNS:
            loud(
                f"dynamo-replay {what} crashed ({self.name}, {column}); command:\n"
                f"  TORCHINDUCTOR_CACHE_DIR=<empty dir> {sys.executable} {self.script} {PREPARE[column] if what == 'preparing' else column} "
                f"{self.artifacts[column]}\nend of its stderr:\n{error.stderr_tail[-2500:]}"
            )

    def prepare(self, columns: list[str]) -> None:
        if any(column in AOT_COLUMNS for column in columns) and "warm" not in columns:
            columns = ["warm", *columns]  # the cold compile's output, their reference
        for column in columns:
            if column not in PREPARE:
                continue
            done = self.work / f"{column}.prepared"  # written once the artifact is complete
            not_applicable = self.work / f"{column}.not-applicable"  # why the path cannot run this job
            stamp = f"{PREPARE[column]} {hashlib.sha256(self.script.read_bytes()).hexdigest()}"  # same job, same mode
            if self.reuse and done.exists() and done.read_text() == stamp:
                print(f"[{self.name}] {column}: reusing what an earlier run prepared in {self.work}", file=sys.stderr)
                if not_applicable.exists():
                    self.not_applicable[column] = not_applicable.read_text()
                continue
            done.unlink(missing_ok=True)
            not_applicable.unlink(missing_ok=True)
            if column in self.artifacts:
                if self.artifacts[column].is_dir():
                    shutil.rmtree(self.artifacts[column])
                self.artifacts[column].unlink(missing_ok=True)
                Path(f"{self.artifacts[column]}.out").unlink(missing_ok=True)
            print(f"[{self.name}] preparing {column}: {PREPARE[column]} (untimed)", file=sys.stderr, flush=True)
            if column == "warm":
                shutil.rmtree(self.warm_cache, ignore_errors=True)
                self.warm_cache.mkdir()
            cache = self.warm_cache if column == "warm" else self.fresh()
            try:
                artifact = self.artifacts.get(column, self.work / "unused")
                result = run_child(self.script, PREPARE[column], artifact, cache)
                if result["not_applicable"]:
                    self.not_applicable[column] = result["not_applicable"]
                    self.errors[column] = result["stderr"][-4000:]
                    not_applicable.write_text(result["not_applicable"])
                    print(
                        f"[{self.name}] {TITLES[column]}: n/a: {result['not_applicable']}", file=sys.stderr, flush=True
                    )
                done.write_text(stamp)
            except ChildFailed as error:
                self.fail(column, error, "preparing")
            finally:
                if cache != self.warm_cache:
                    shutil.rmtree(cache, ignore_errors=True)

    def run_column(self, column: str, **kwargs: Any) -> dict[str, Any]:
        if column in AOT_COLUMNS:
            kwargs["extra_env"] = {**kwargs.get("extra_env", {}), "WARM_START_REFERENCE": str(self.artifacts["warm"])}
        cache = self.fresh()
        if column == "warm":  # a copy, so no run changes what the next one finds
            shutil.rmtree(cache)
            shutil.copytree(self.warm_cache, cache)
        try:
            return run_child(self.script, column, self.artifacts.get(column, self.work / "unused"), cache, **kwargs)
        finally:
            shutil.rmtree(cache, ignore_errors=True)

    def measure(self, columns: list[str], repeat: int) -> dict[str, Any]:
        self.prepare(columns)
        runs: dict[str, list[dict[str, Any]]] = {column: [] for column in columns}
        problems: list[str] = []
        for round_ in range(repeat):
            for column in columns:
                if column in self.failed or column in self.not_applicable:
                    continue
                try:
                    result = self.run_column(column)
                except ChildFailed as error:
                    self.fail(column, error, "timed run")
                    continue
                result.pop("stderr")
                runs[column].append(result)
                if column in REPLAY_COLUMNS:
                    problems += self.check_replay(column, round_, result)
                close = (result["reference"] or {}).get("close")
                if column in AOT_COLUMNS and (result["equal"] is not True or not close):
                    loud(
                        f"{self.name} {TITLES[column]} round {round_ + 1}: bitwise equal to its untimed run: "
                        f"{result['equal']} {result['detail']}; within 1e-4 of cold compile's: {result['reference']}"
                    )
            print(
                f"[{self.name}] round {round_ + 1}/{repeat}: "
                + ", ".join(
                    f"{column} {runs[column][-1]['first']:.2f}/{runs[column][-1]['whole']:.2f}"
                    for column in columns
                    if column not in self.failed and runs[column]
                )
                + "  (first output/exit, s)",
                file=sys.stderr,
                flush=True,
            )
        return {
            "runs": runs,
            "failed": self.failed,
            "errors": self.errors,
            "problems": problems,
            "not_applicable": self.not_applicable,
        }

    def check_replay(self, column: str, round_: int, result: dict[str, Any]) -> list[str]:
        problems = []
        summary = result["summary"] or {}
        if result["equal"] is not True:
            problems.append(
                f"{self.name} {column} round {round_ + 1}: OUTPUT DIFFERS from the captured run's "
                f"(torch.equal False; {result['detail']})"
            )
        if not summary.get("loaded"):
            problems.append(
                f"{self.name} {column} round {round_ + 1}: the store was NOT LOADED: {summary.get('refused')}"
            )
        for problem in problems:
            loud("REPLAY PROBLEM: " + problem)
        if round_ == 0:
            print(
                f"  [{column}] loaded {summary.get('loaded')}, precompiled {summary.get('precompiled')}, "
                f"{summary.get('entries_installed')} saved frames installed, {summary.get('kernel_libraries')} kernel "
                f"libraries; import {summary.get('import_s', 0):.2f} s, load {summary.get('load_s', 0):.3f} s, install "
                f"{summary.get('install_s', 0):.3f} s; compiled anyway: {len(summary.get('compiled', []))} frames",
                file=sys.stderr,
                flush=True,
            )
            for frame in summary.get("compiled", [])[:10]:
                print(f"    {frame}", file=sys.stderr)
        return problems


def _median(values: list[float]) -> float:
    return statistics.median(values)


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = []
    for name, result in results.items():
        runs, failed = result["runs"], result["failed"]
        first = {c: [r["first"] for r in rs] for c, rs in runs.items() if rs}
        whole = {c: [r["whole"] for r in rs] for c, rs in runs.items() if rs}
        med_first = {c: _median(v) for c, v in first.items()}
        med_whole = {c: _median(v) for c, v in whole.items()}
        n = len(first.get("eager", []))
        lines += [
            f"\n**{name}** (medians of {n} fresh processes; min-max in brackets; overhead = column - eager)\n",
            "| column | first output (s) | whole process (s) | overhead, first output (s) | / cold's | "
            "overhead, whole process (s) | / cold's |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        have_base = "eager" in med_first and "cold" in med_first
        cold_first = med_first["cold"] - med_first["eager"] if have_base else float("nan")
        cold_whole = med_whole["cold"] - med_whole["eager"] if have_base else float("nan")
        not_applicable = result.get("not_applicable", {})
        for column in runs:
            if column in not_applicable:
                lines.append(f"| {TITLES[column]} | n/a: {not_applicable[column][:150]} | | | | | |")
                continue
            if column not in med_first:
                lines.append(f"| {TITLES[column]} | failed ({failed.get(column, '?')[:150]}) | | | | | |")
                continue
            spread_first = f"[{min(first[column]):.2f}-{max(first[column]):.2f}]"
            spread_whole = f"[{min(whole[column]):.2f}-{max(whole[column]):.2f}]"
            cells = [f"{med_first[column]:.2f} {spread_first}", f"{med_whole[column]:.2f} {spread_whole}"]
            if "eager" in med_first:
                over_first = med_first[column] - med_first["eager"]
                over_whole = med_whole[column] - med_whole["eager"]
                share_first = "" if column == "eager" or not have_base else f"{100 * over_first / cold_first:.1f}%"
                share_whole = "" if column == "eager" or not have_base else f"{100 * over_whole / cold_whole:.1f}%"
                cells += [f"{over_first:.2f}", share_first, f"{over_whole:.2f}", share_whole]
            else:
                cells += ["", "", "", ""]
            mark = " **(output MISMATCH)**" if any(r["equal"] is False for r in runs[column]) else ""
            if column in AOT_COLUMNS and any(not (r["reference"] or {}).get("close") for r in runs[column]):
                mark += " **(not within 1e-4 of cold compile's output)**"
            lines.append(f"| {TITLES[column]}{mark} | " + " | ".join(cells) + " |")
        lines.append("")
        if not have_base:
            lines.append("target: not assessed (eager or cold compile missing)")
        elif "replay" not in med_first:
            lines.append(f"target: MISSED (dynamo-replay failed: {failed.get('replay', 'not run')[:150]})")
        else:
            replay_over = med_first["replay"] - med_first["eager"]
            compared = PYTORCH_COLUMNS + AOT_COLUMNS  # PyTorch's own ahead-of-time paths, where they run the job
            pytorch = {c: med_first[c] - med_first["eager"] for c in compared if c in med_first}
            best = min(pytorch, key=pytorch.__getitem__)
            valid = all(r["equal"] is True and (r["summary"] or {}).get("loaded") for r in runs["replay"])
            five = replay_over <= 0.05 * cold_first
            below = all(replay_over < value for value in pytorch.values())
            missing = [c for c in compared if c not in med_first and c not in not_applicable]
            lines.append(
                f"target (issue 10), time to first output: dynamo-replay's overhead {replay_over:.2f} s = "
                f"{100 * replay_over / cold_first:.1f}% of cold's {cold_first:.2f} s: <= 5%: {'MET' if five else 'MISSED'}; "
                f"below every PyTorch column (lowest: {TITLES[best]}, {pytorch[best]:.2f} s"
                + (f"; not measured: {', '.join(missing)}" if missing else "")
                + f"): {'MET' if below else 'MISSED'}. "
                f"Overall: **{'MET' if five and below and valid else 'MISSED'}**"
                + ("" if valid else " (replay's output differed from the capture's, or the store was not loaded)")
            )
            if name in HELD_OUT_WORKLOADS and "warm" in pytorch:
                five_needed = cold_first > 20
                warm_ratio = pytorch["warm"] / replay_over if replay_over > 0 else float("inf")
                met = (five or not five_needed) and warm_ratio >= 3 and valid
                lines.append(
                    "target (issue 35, held-out): <= 5% of cold "
                    + (f"{'MET' if five else 'MISSED'}" if five_needed else "not required (cold under 20 s)")
                    + f"; PyTorch's warm caches {warm_ratio:.1f}x dynamo-replay's overhead, >= 3x: "
                    f"{'MET' if warm_ratio >= 3 else 'MISSED'}. Overall: **{'MET' if met else 'MISSED'}**"
                )
        phases = {
            c: rs
            for c, rs in runs.items()
            if rs and all({"imported", "built", "entered"} <= r["marks"].keys() for r in rs)
        }
        if phases:
            lines += [
                "",
                "Where the time to first output goes (medians, s from spawn): interpreter + `import torch` | "
                "build the model | compile setup (load caches, enter replay) | torch.compile + calls to first output",
                "",
            ]
            for column, rs in phases.items():
                cut = [_median([r["marks"][k] for r in rs]) for k in ("imported", "built", "entered", "first")]
                lines.append(
                    f"- {TITLES[column]}: {cut[0]:.2f} | {cut[1] - cut[0]:.2f} | {cut[2] - cut[1]:.2f} | {cut[3] - cut[2]:.2f}"
                )
        for column in REPLAY_COLUMNS:
            if runs.get(column) and runs[column][0].get("summary"):
                lines.append(f"\nFrames, {TITLES[column]}: " + frames_line(runs[column][0]["summary"]))
        checked = [c for c in AOT_COLUMNS if runs.get(c)]
        if checked:
            lines += [
                "",
                "Ahead-of-time outputs (first output vs its untimed run's, bitwise; vs a cold compile's, "
                "max |diff| / max |cold|, close at <= 1e-4):",
                "",
            ]
            for column in checked:
                lines.append(
                    f"- {TITLES[column]}: "
                    + "; ".join(
                        f"bitwise {r['equal']}{' (' + r['detail'] + ')' if r['detail'] else ''}, vs cold "
                        f"{(r['reference'] or {}).get('detail', 'not compared')}"
                        for r in runs[column]
                    )
                )
        changed = [c for c in runs if c in CHANGES]
        if changed:
            lines += ["", "What a user changes in the job to use each path:", ""]
            for column in changed:
                extra = WORKLOAD_CHANGES.get((name, column))
                lines.append(f"- {TITLES[column]}: {CHANGES[column]}" + (f". This job: {extra}" if extra else ""))
        for problem in result["problems"]:
            lines.append(f"\n**REPLAY PROBLEM: {problem}**")
    return "\n".join(lines)


def frames_line(summary: dict[str, Any]) -> str:
    """What a replay's summary says of its frames: installed, not saved, refused, compiled."""

    return (
        f"{summary.get('entries_installed')} saved entries installed, "
        f"{_reasons(summary.get('not_packaged', []))} frames not saved, "
        f"{_reasons(summary.get('skipped', []))} refused at install, "
        f"{len(summary.get('compiled', []))} compiles at replay"
    )


def frames_table(results: dict[str, dict[str, Any]]) -> str:
    """Every workload's frames under replay, one line each: saved by the capture, run from the
    store, refused at install and not saved, each with its reasons (issue 35's count)."""
    lines = [
        "\n**Frames under dynamo-replay** (first timed replay of each workload)\n",
        "| workload | frames saved | run from the store | refused at install | not saved | compiles at replay |",
        "|---|---:|---:|---|---|---:|",
    ]
    for name, result in results.items():
        summary = next((r["summary"] for r in result["runs"].get("replay", []) if r.get("summary")), None)
        if summary is None:
            lines.append(f"| {name} | replay not measured | | | | |")
            continue
        saved = summary.get("saved_frames", [])
        used = len(saved) - len(summary.get("unused_frames", []))
        lines.append(
            f"| {name} | {len(saved)} | {used} | {_reasons(summary.get('skipped', []))} | "
            f"{_reasons(summary.get('not_packaged', []))} | {len(summary.get('compiled', []))} |"
        )
    return "\n".join(lines)


def _reasons(entries: list[str]) -> str:
    reasons = sorted({entry.split(": ", 1)[-1] for entry in entries})
    return f"{len(entries)}" + (f": {'; '.join(reasons)[:300]}" if reasons else "")


def profile_replay(name: str, work: Path, how: str, column: str, reuse: bool) -> None:
    bench = Bench(name, work, reuse)
    bench.prepare([column])
    if column in bench.failed:
        print(f"[{name}] cannot profile {column}: {bench.failed[column]}")
        return
    if how == "cprofile":
        stats_path = bench.work / "profile.pstats"
        result = bench.run_column(column, extra_env={"WARM_START_PROFILE": str(stats_path)})
        print(
            f"\n== {name}, {TITLES[column]}: cProfile from the child's first line to its first output "
            f"(first output {result['first']:.2f} s after spawn, exit {result['whole']:.2f} s, profiler overhead included)"
        )
        stats = pstats.Stats(str(stats_path)).sort_stats("cumulative")
        stats.print_stats(15)
        print(
            "-- the same, without the import machinery (<frozen importlib>, exec, __import__): "
            "where the imports and the calls go"
        )
        stats.print_stats(r"^(?!<frozen |\{built-in method builtins\.(exec|__import__)\}|\{method 'acquire')", 15)
    else:
        result = bench.run_column(column, python_flags=("-X", "importtime"))
        entries = []
        for line in result["stderr"].splitlines():
            if line.startswith("import time:") and "|" in line:
                fields = [field.strip() for field in line[len("import time:") :].split("|")]
                if fields[0].isdigit():
                    entries.append((int(fields[1]), int(fields[0]), fields[2]))
        print(
            f"\n== {name}, {TITLES[column]}: python -X importtime (first output at {result['first']:.2f} s, exit "
            f"{result['whole']:.2f} s; {len(entries)} imports, top 15 by cumulative time)"
        )
        print(f"{'cumulative (s)':>15} {'self (s)':>10}  module")
        for cumulative, own, module in sorted(entries, reverse=True)[:15]:
            print(f"{cumulative / 1e6:>15.3f} {own / 1e6:>10.3f}  {module}")
    if column in REPLAY_COLUMNS:
        summary = result["summary"] or {}
        print(
            f"replay: loaded {summary.get('loaded')}, bitwise equal {result['equal']}, import {summary.get('import_s', 0):.2f} s, "
            f"load {summary.get('load_s', 0):.3f} s, install {summary.get('install_s', 0):.3f} s, "
            f"compiled anyway: {summary.get('compiled')}"
        )


def environment() -> dict[str, Any]:
    import importlib.metadata as metadata

    root = Path(__file__).resolve().parent.parent
    git = lambda *args: subprocess.run(["git", *args], cwd=root, capture_output=True, text=True).stdout.strip()  # noqa: E731
    versions = {}
    for package in ("torch", "transformers"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "python": platform.python_version(),
        **versions,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "commit": git("rev-parse", "--short", "HEAD"),
        "dirty": bool(git("status", "--porcelain")),
        "argv": sys.argv[1:],
        "loadavg_start": os.getloadavg(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    parser.add_argument(
        "--workloads",
        nargs="+",
        default=["real"],
        choices=[*WORKLOADS, *WORKLOAD_SETS],
        help=f"workloads, or a set of them: real ({' '.join(REAL_WORKLOADS)}, the default) or "
        f"held-out ({' '.join(HELD_OUT_WORKLOADS)})",
    )
    parser.add_argument(
        "--columns",
        nargs="+",
        default=COLUMNS,
        choices=COLUMNS,
        help="columns to measure (eager and cold are always measured)",
    )
    parser.add_argument("--json", help="write every measurement to this file")
    parser.add_argument("--work", help="keep the work directory (stores, Mega-Cache files, child scripts) here")
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="with --work: reuse the warm cache, Mega-Cache files and stores an earlier run prepared there",
    )
    parser.add_argument(
        "--profile-replay",
        nargs="?",
        const="cprofile",
        choices=["cprofile", "importtime"],
        help="instead of the benchmark: one replay child per workload under cProfile (to the first "
        "output, top 15 cumulative) or python -X importtime (top 15 imports)",
    )
    parser.add_argument(
        "--profile-column",
        default="replay",
        choices=COLUMNS,
        help="the column --profile-replay profiles (default: replay)",
    )
    args = parser.parse_args()
    args.workloads = [name for given in args.workloads for name in WORKLOAD_SETS.get(given, [given])]
    columns = [c for c in COLUMNS if c in {"eager", "cold", *args.columns}]
    work_context = tempfile.TemporaryDirectory(prefix="warm-start-") if not args.work else None
    work = Path(work_context.name if work_context else args.work)
    work.mkdir(parents=True, exist_ok=True)
    try:
        if args.profile_replay:
            status = 0
            for name in args.workloads:
                try:
                    profile_replay(name, work, args.profile_replay, args.profile_column, args.reuse and bool(args.work))
                except ChildFailed as error:
                    loud(
                        f"{name}: profiled {args.profile_column} child failed: {error.last_line}\n{error.stderr_tail[-2500:]}"
                    )
                    status = 1
            return status
        meta = environment()
        results = {}
        for name in args.workloads:
            results[name] = Bench(name, work, args.reuse and bool(args.work)).measure(columns, args.repeat)
        meta["loadavg_end"] = os.getloadavg()
    finally:
        if work_context:
            work_context.cleanup()
    if args.json:
        Path(args.json).write_text(
            json.dumps({"environment": meta, "repeat": args.repeat, "results": results}, indent=1)
        )
    print(
        f"warm_start.py {' '.join(sys.argv[1:])}: torch {meta['torch']}, transformers {meta['transformers']}, "
        f"Python {meta['python']}, {meta['cpus']} CPUs, tree {meta['commit']}{' (modified)' if meta['dirty'] else ''}, "
        f"load average {meta['loadavg_start'][0]:.1f} at start, {meta['loadavg_end'][0]:.1f} at end"
    )
    print(table(results))
    print(frames_table(results))
    problems = [p for r in results.values() for p in r["problems"]]
    replay_failures = [
        f"{name} {c}: {r['failed'][c]}" for name, r in results.items() for c in REPLAY_COLUMNS if c in r["failed"]
    ]
    if problems or replay_failures:
        loud("dynamo-replay problems:\n" + "\n".join(problems + replay_failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
