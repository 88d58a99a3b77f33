"""Run the bundled Qwen3 model (nx_src/nx_qwen3.nx, loaded from GGUF by nx_src/nx_gguf.nx).

    from nxc.models import qwen3
    model = qwen3.load("model.gguf")                 # backend="py" for checked memory
    hidden, out = model.forward([1, 2, 3])           # every layer's hidden state, final norm
    tokens = model.generate([1, 2, 3], 16)           # greedy, paged KV cache

All the work is nx code: the GGUF is parsed and read by nx_gguf.nx through the runtime's
file externs, the forward pass is nx_qwen3_forward. This module only converts: token ids in,
float32 numpy arrays out. A file the reader refuses (not GGUF, truncated, an unsupported tensor
type, a missing tensor or key, shapes that do not match the metadata) raises Qwen3Error with
the reader's reason and the tensor or key it concerns.

Command line:  python -m nxc.models.qwen3 MODEL.gguf --tokens 1,2,3 [--new 16] [--backend py]
               python -m nxc.models.qwen3 encode MODEL.gguf "a prompt" -o emb.npy
                   (the Z-Image text encoder: text_encoder() here, nxc/models/text_encoder.py)
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from nxc import paths

__all__ = ["Qwen3", "Qwen3Error", "load", "text_encoder", "main", "DEFAULT_SESSION_TOKENS"]

# A session's KV cache holds this many tokens unless asked for more (it is reserved whole
# when the session starts: 36 layers x 1024 KV width x 8-byte words is 0.6 MB a token for
# Qwen3-4B, so the file's 40,960-token context would take 24 GB).
DEFAULT_SESSION_TOKENS = 2048

_MESSAGES = {
    1: "cannot open the file",
    2: "the file is truncated (a header value or a tensor's data runs past its end)",
    3: "not a GGUF file (wrong magic)",
    4: "unsupported GGUF version (2 and 3 are read)",
    5: "malformed GGUF header",
    6: "general.architecture is not 'qwen3'",
    7: "a required metadata key is missing",
    8: "a required tensor is missing",
    9: "unsupported tensor type",
    10: "a tensor's shape does not match the metadata",
    11: "bad alignment (general.alignment, or a tensor offset not aligned)",
    12: "out of memory",
    13: "a tensor appears twice",
    14: "a metadata key has the wrong value type",
    15: "the metadata describe an impossible model (head counts, head_dim)",
}
_ROLES = {1: "token_embd", 2: "output_norm", 3: "output", 10: "attn_norm", 11: "attn_q", 12: "attn_k",
          13: "attn_v", 14: "attn_output", 15: "attn_q_norm", 16: "attn_k_norm", 17: "ffn_norm",
          18: "ffn_gate", 19: "ffn_up", 20: "ffn_down"}
_KEYS = {1: "general.architecture", 2: "general.alignment", 3: "qwen3.block_count",
         4: "qwen3.embedding_length", 5: "qwen3.feed_forward_length", 6: "qwen3.attention.head_count",
         7: "qwen3.attention.head_count_kv", 8: "qwen3.attention.key_length", 9: "qwen3.rope.freq_base",
         10: "qwen3.attention.layer_norm_rms_epsilon", 11: "qwen3.context_length",
         12: "qwen3.attention.value_length (differs from attention.key_length; K and V rows must be one width)"}
# ggml's type ids (ggml.h enum ggml_type), to name a refused tensor's type
_GGML_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
               10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K", 16: "IQ2_XXS",
               17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S",
               23: "IQ4_XS", 24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M",
               30: "BF16", 34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4"}
_READ_TYPES = "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K"
_MODEL_ERRORS = {1: "bad argument", 2: "token id out of range", 3: "out of memory", 4: "bad weight",
                 5: "the paged sequence is not at that position", 6: "the context or the KV cache is full"}
_CONFIG = ("n_layers", "hidden", "n_heads", "n_kv_heads", "head_dim", "inter", "vocab", "n_ctx",
           "rope_theta", "rms_eps")


class Qwen3Error(RuntimeError):
    """The GGUF reader or the model refused (the message says why)."""


def _f32(bits: np.ndarray) -> np.ndarray:
    return (bits & 0xFFFFFFFF).astype(np.uint32).view(np.float32)


def _tensor_name(role: int, layer: int) -> str:
    base = _ROLES.get(role, f"tensor role {role}")
    return f"blk.{layer}.{base}.weight" if layer >= 0 else f"{base}.weight"


def default_threads() -> int:
    """The cores this process may run on (sched_getaffinity where there is one)."""
    try:
        return max(1, min(256, len(os.sched_getaffinity(0))))
    except (AttributeError, OSError):
        return max(1, min(256, os.cpu_count() or 1))


class Qwen3:
    """A Qwen3 model loaded from a GGUF file into nx memory."""

    def __init__(self, path, backend: str = "c", checked: bool = True, threads: int | None = None,
                 progress: bool | None = None, mmap: bool = True):
        import nxc
        self.threads = default_threads() if threads is None else threads
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or not 1 <= self.threads <= 256:
            raise Qwen3Error(f"threads={threads!r}: the thread count must be an integer from 1 to 256")
        self.path = os.fspath(path)
        # The linear layers split their rows across these threads (nx_f32_gemm.nx); the
        # outputs are the same bits for any count.
        self.nx = nxc.load(os.path.join(paths.bundled_dir(), "nx_gguf.nx"), backend=backend,
                           checked=checked, threads=self.threads)
        raw = os.fsencode(self.path)
        if not raw or len(raw) > 4096 or b"\0" in raw:
            raise Qwen3Error(f"{self.path!r}: not a usable file name")
        name = np.frombuffer(raw, np.uint8).copy()
        self._g = self.nx.nx_gguf_new()
        self._m = self.nx.nx_qwen3_model_new()
        # mmap: the tensors are packed from a read-only mapping of the file, one tensor mapped at
        # a time (nx_gguf_load_weight); mmap=False reads each into memory of its own first.
        self.nx.nx_gguf_set_map(self._g, 1 if mmap else 0)
        code = self._load(name, _LoadProgress(self.path, progress))
        if code != 0:
            msg = self._describe(code)
            self.close()            # frees what was loaded before the failure
            raise Qwen3Error(f"{self.path}: {msg}")
        c = [self.nx.nx_qwen3_config(self._m, k) for k in range(len(_CONFIG))]
        self.config = dict(zip(_CONFIG, c))
        self.config["rope_theta"] = float(_f32(np.array([c[8]]))[0])
        self.config["rms_eps"] = float(_f32(np.array([c[9]]))[0])

    def _load(self, name: np.ndarray, progress: "_LoadProgress") -> int:
        """nx_gguf_qwen3_from_file in its steps (nx_gguf.nx), a progress line after each layer."""
        nx, g, m = self.nx, self._g, self._m
        code = nx.nx_gguf_open(name, len(name), g)
        if code == 0:
            code = nx.nx_gguf_load_qwen3_begin(g, m)
            n = nx.nx_qwen3_config(m, 0) if code == 0 else 0
            progress.start(n)
            for layer in range(n):
                progress.layer(layer, g.loaded)
                code = nx.nx_gguf_load_qwen3_layer(g, m, layer)
                if code != 0:
                    break
            if code == 0:
                code = nx.nx_gguf_load_qwen3_end(g, m)
            progress.end(g.loaded, code == 0)
        if g.h >= 0:
            nx.nx_gguf_close(g)
        return code

    def close(self) -> None:
        """Free the model's nx memory (the weights); the object cannot run afterwards."""
        if self._m is not None:
            self.nx.nx_qwen3_model_free(self._m)
            self._m = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _describe(self, code: int) -> str:
        g = self._g
        msg = _MESSAGES.get(code, f"reader error {code}")
        if code == 9:
            t = self.nx.nx_gguf_find(g, g.err_role, g.err_layer).ggml_type
            msg += f" {_GGML_TYPES.get(t, f'id {t}')} (reads {_READ_TYPES})"
        if code in (8, 9, 10, 11, 13) or (code == 2 and g.err_role):
            if g.err_role:
                msg += f": {_tensor_name(g.err_role, g.err_layer)}"
        if code in (6, 7, 14, 15) and g.err_key:
            msg += f": {_KEYS.get(g.err_key, g.err_key)}"
        return msg

    def _tokens(self, tokens) -> np.ndarray:
        t = np.ascontiguousarray(np.asarray(tokens, dtype=np.int64).ravel())
        if t.size == 0:
            raise Qwen3Error("no tokens given")
        bad = (t < 0) | (t >= self.config["vocab"])
        if bad.any():
            raise Qwen3Error(f"token id {int(t[bad][0])} is out of range (vocab {self.config['vocab']})")
        return t

    def _model(self):
        """The nx model handle; refuses a closed model before any nx code sees a null."""
        if self._m is None:
            raise Qwen3Error("the model was closed")
        return self._m

    def _check(self, code: int, what: str) -> None:
        if code != 0:
            raise Qwen3Error(f"{what}: {_MODEL_ERRORS.get(code, f'error {code}')}")

    def forward(self, tokens, causal: bool = True):
        """One contiguous pass over `tokens` (positions 0..T-1).

        Returns (hidden, out): hidden [n_layers + 1, T, hidden] float32 -- the embeddings, then
        each layer's output (HF's output_hidden_states[i] for i < n_layers) -- and out
        [T, hidden], the final-normed states (HF's last hidden state)."""
        t = self._tokens(tokens)
        L, H = self.config["n_layers"], self.config["hidden"]
        hidden = np.zeros((L + 1, len(t), H), np.int64)
        out = np.zeros((len(t), H), np.int64)
        self._check(self.nx.nx_qwen3_forward(self._model(), t, len(t), 0, None, 1 if causal else 0, hidden, out),
                    "forward")
        return _f32(hidden), _f32(out)

    def logits(self, out_row) -> np.ndarray:
        """Tied-embedding logits [vocab] of one final-normed row (float32 numpy)."""
        row = np.ascontiguousarray(np.asarray(out_row, np.float32)).view(np.uint32).astype(np.int64)
        z = np.zeros(self.config["vocab"], np.int64)
        self._check(self.nx.nx_qwen3_logits(self._model(), row, z), "logits")
        return _f32(z)

    def session(self, block_size: int = 16, n_blocks: int | None = None,
                max_tokens: int | None = None) -> "Session":
        """A paged KV-cache sequence for step-by-step decoding, holding max_tokens tokens
        (default DEFAULT_SESSION_TOKENS, at most the file's context_length); n_blocks, if
        given, sets the pool's size in blocks instead."""
        return Session(self, block_size, n_blocks, max_tokens)

    def generate(self, prompt, n_new: int, block_size: int = 16) -> list[int]:
        """Greedy continuation: the prompt in one paged step, then one token per step.
        The KV cache holds exactly len(prompt) + n_new tokens, within the context length."""
        t = self._tokens(prompt)
        if n_new <= 0:
            return []
        ctx = self.config["n_ctx"]
        if ctx > 0 and len(t) + n_new > ctx:
            raise Qwen3Error(f"generate: {len(t)} prompt tokens + {n_new} new exceed the context "
                             f"length {ctx}")
        with self.session(block_size, max_tokens=len(t) + n_new) as s:
            out = np.zeros(n_new, np.int64)
            self._check(self.nx.nx_qwen3_generate(self._model(), s.seq, t, len(t), n_new, out), "generate")
            return [int(v) for v in out]


class Session:
    """A paged KV-cache sequence: step(tokens) runs them at the next positions."""

    def __init__(self, model: Qwen3, block_size: int, n_blocks: int | None, max_tokens: int | None):
        self.model = model
        ctx = model.config["n_ctx"]
        if block_size <= 0:
            raise Qwen3Error(f"block_size must be positive, not {block_size}")
        if n_blocks is None:
            want = max_tokens
            if want is None:
                want = min(DEFAULT_SESSION_TOKENS, ctx) if ctx > 0 else DEFAULT_SESSION_TOKENS
            if want <= 0:
                raise Qwen3Error(f"max_tokens must be positive, not {want}")
            if ctx > 0 and want > ctx:
                raise Qwen3Error(f"max_tokens {want} exceeds the model's context length {ctx}")
            n_blocks = -(-want // block_size)
        elif n_blocks <= 0:
            raise Qwen3Error(f"n_blocks must be positive, not {n_blocks}")
        self.capacity = n_blocks * block_size          # tokens the cache can hold
        self.seq = model.nx.nx_qwen3_seq_new(model._model(), block_size, n_blocks)
        if not self.seq:
            raise Qwen3Error(f"cannot allocate a KV cache of {self.capacity} tokens")
        self.position = 0

    def step(self, tokens):
        """(hidden [n_layers + 1, T, hidden], out [T, hidden]) of these tokens, cached."""
        m = self.model
        t = m._tokens(tokens)
        if self.seq is None:
            raise Qwen3Error("the session was closed")
        if self.position + len(t) > self.capacity:
            raise Qwen3Error(f"step: {self.position} + {len(t)} tokens exceed the session's KV cache "
                             f"of {self.capacity} (session(max_tokens=...))")
        L, H = m.config["n_layers"], m.config["hidden"]
        hidden = np.zeros((L + 1, len(t), H), np.int64)
        out = np.zeros((len(t), H), np.int64)
        m._check(m.nx.nx_qwen3_forward(m._model(), t, len(t), self.position, self.seq, 1, hidden, out), "step")
        self.position += len(t)
        return _f32(hidden), _f32(out)

    def greedy(self, out_row) -> int:
        row = np.ascontiguousarray(np.asarray(out_row, np.float32)).view(np.uint32).astype(np.int64)
        return int(self.model.nx.nx_qwen3_greedy(self.model._model(), row))

    def close(self):
        if self.seq is not None:
            self.model.nx.nx_qwen3_seq_free(self.seq)
            self.seq = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def load(path, backend: str = "c", checked: bool = True, threads: int | None = None,
         progress: bool | None = None, mmap: bool = True) -> Qwen3:
    """Load a Qwen3 GGUF (F32 / F16 / BF16 / Q8_0 / Q4_0 / Q4_K / Q5_K / Q6_K tensors) with the
    nx reader; raises Qwen3Error.

    checked=False builds the C without memory checks (faster; a fault may then crash the
    process instead of raising). threads: how many threads the linear layers use (None: every
    core this process may run on; the results are the same bits for any count). progress: a line
    on stderr after each layer while the weights load (None: only when stderr is a terminal and
    the file is over 256 MB). mmap: the tensors are packed from a read-only mapping of the file
    (default; one tensor mapped at a time); mmap=False reads each tensor into memory first (the
    same model, bit for bit)."""
    return Qwen3(path, backend, checked=checked, threads=threads, progress=progress, mmap=mmap)


class _LoadProgress:
    """A line on stderr, rewritten after each layer the loader finishes (nx_gguf_load_qwen3_layer):
    layers done, tensor bytes loaded against the file's size, seconds so far."""

    def __init__(self, path: str, enabled: bool | None, stream=None):
        self._name = os.path.basename(path)
        self._stream = sys.stderr if stream is None else stream
        try:
            self.size = os.path.getsize(path)
        except OSError:
            self.size = 0
        if enabled is None:
            enabled = self._stream.isatty() and self.size > (256 << 20)
        self.enabled = bool(enabled) and self.size > 0
        self.layers = 0
        self._t0 = time.monotonic()

    def start(self, layers: int) -> None:
        self.layers = layers
        self._t0 = time.monotonic()

    def layer(self, done: int, loaded: int) -> None:
        if self.enabled:
            self._line(done, loaded)

    def end(self, loaded: int, ok: bool) -> None:
        if self.enabled and self.layers:
            if ok:
                self._line(self.layers, loaded)
            print(file=self._stream, flush=True)

    def _line(self, done: int, loaded: int) -> None:
        frac = done / self.layers if self.layers else 1.0
        bar = "#" * int(frac * 30)
        print(f"\rloading {self._name} [{bar:<30}] layer {done}/{self.layers}, "
              f"{loaded / 2**20:,.0f} / {self.size / 2**20:,.0f} MiB, {time.monotonic() - self._t0:.1f} s",
              end="", file=self._stream, flush=True)


def text_encoder(path, *, backend: str = "c", checked: bool = True, threads: int | None = None,
                 progress: bool | None = None, mmap: bool = True, **kw):
    """The Z-Image text encoder (nxc/models/text_encoder.py) of one GGUF file: its model and
    its tokenizer. Raises Qwen3Error or text_encoder.EncoderError."""
    from nxc.models.text_encoder import EncoderError, TextEncoder
    from nxc.models.tokenizer import Tokenizer, TokenizerError
    try:
        tok = Tokenizer.from_gguf(path)
    except TokenizerError as e:
        raise EncoderError(str(e)) from None
    return TextEncoder(load(path, backend, checked=checked, threads=threads, progress=progress, mmap=mmap), tok, **kw)


def encode_main(argv=None) -> int:
    """`python -m nxc.models.qwen3 encode`: prompt to embeddings (.npy)."""
    from nxc.models.text_encoder import MAX_SEQUENCE_LENGTH, Z_IMAGE_LAYER, EncoderError
    ap = argparse.ArgumentParser(
        prog="python -m nxc.models.qwen3 encode",
        description="The Z-Image text encoder: a prompt through Qwen3's chat template and "
                    "tokenizer (both from the GGUF file), the hidden states of the "
                    "next-to-last layer (hidden_states[-2]) written as a float32 .npy "
                    "array [n_tokens, hidden].")
    ap.add_argument("model", metavar="MODEL.gguf", help="a Qwen3 GGUF file with its tokenizer")
    ap.add_argument("prompt", help="the prompt text")
    ap.add_argument("-o", "--output", metavar="FILE.npy", help="write the embeddings here "
                    "(default: print their shape and first values)")
    ap.add_argument("--layer", type=int, default=Z_IMAGE_LAYER,
                    help="which entry of HF's hidden_states (default -2, Z-Image's)")
    ap.add_argument("--max-length", type=int, default=MAX_SEQUENCE_LENGTH,
                    help=f"truncate to this many tokens (default {MAX_SEQUENCE_LENGTH}, Z-Image's)")
    ap.add_argument("--unchecked", action="store_true", help="C without memory checks (faster)")
    ap.add_argument("--backend", choices=("c", "py"), default="c", help="c (default) or py (checked reference)")
    ap.add_argument("--threads", type=int, default=None, help="threads for the linear layers (default: all cores; same results for any count)")
    ap.add_argument("--show-template", action="store_true", help="print the templated text and its tokens")
    ap.add_argument("--no-progress", action="store_true", help="no progress line while the weights load")
    ap.add_argument("--progress", action="store_true", help="a progress line even when stderr is not a terminal")
    ap.add_argument("--no-mmap", action="store_true", help="read the tensors instead of mapping the file")
    args = ap.parse_args(argv)
    try:
        enc = text_encoder(args.model, backend=args.backend, checked=not args.unchecked,
                           threads=args.threads, mmap=not args.no_mmap,
                           progress=False if args.no_progress else (True if args.progress else None),
                           max_length=args.max_length, layer=args.layer)
        if args.show_template:
            print(repr(enc.template(args.prompt)))
            print(",".join(map(str, enc.tokens(args.prompt))))
        emb = enc.encode(args.prompt)
    except (EncoderError, Qwen3Error) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.output:
        try:
            np.save(args.output, emb)
        except OSError as e:
            print(f"error: cannot write {args.output}: {e.strerror or e}", file=sys.stderr)
            return 2
        print(f"wrote {args.output}: float32 {list(emb.shape)} (hidden_states[{args.layer}])")
    else:
        print(f"float32 {list(emb.shape)} (hidden_states[{args.layer}]); last row, first 8:",
              np.array2string(emb[-1][:8], precision=5))
    return 0


# Exit statuses as every nxc command's (docs/errors.md): 0 done, 2 a bad argument or a file
# that cannot be used (missing, damaged, refused), which is where every failure here lands.
def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "encode":
        return encode_main(argv[1:])
    ap = argparse.ArgumentParser(prog="python -m nxc.models.qwen3",
                                 description="Run a Qwen3 GGUF with the bundled nx model: the last "
                                             "hidden state and a greedy continuation. "
                                             "'python -m nxc.models.qwen3 encode --help': the Z-Image "
                                             "text encoder (prompt to embeddings).")
    ap.add_argument("model", help=f"a Qwen3 GGUF file ({_READ_TYPES} tensors)")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids, e.g. 1,2,3")
    ap.add_argument("--new", type=int, default=16, help="tokens to generate greedily (default 16)")
    ap.add_argument("--backend", choices=("c", "py"), default="c")
    ap.add_argument("--unchecked", action="store_true", help="C without memory checks (faster)")
    args = ap.parse_args(argv)
    try:
        toks = [int(v) for v in args.tokens.split(",") if v.strip()]
    except ValueError:
        ap.error(f"--tokens must be comma-separated integers, not {args.tokens!r}")
    try:
        model = load(args.model, args.backend, checked=not args.unchecked)
        _, out = model.forward(toks)
        gen = model.generate(toks, args.new)
    except Qwen3Error as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    c = model.config
    print(f"{args.model}: {c['n_layers']} layers, hidden {c['hidden']}, {c['n_heads']}/{c['n_kv_heads']} heads, "
          f"head_dim {c['head_dim']}, vocab {c['vocab']}")
    print("last hidden state (first 8):", np.array2string(out[-1][:8], precision=5))
    print("greedy:", ",".join(str(t) for t in gen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
