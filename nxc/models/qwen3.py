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
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

from nxc import paths

__all__ = ["Qwen3", "Qwen3Error", "load", "main"]

_MESSAGES = {
    1: "cannot open the file",
    2: "the file is truncated (a header value or a tensor's data runs past its end)",
    3: "not a GGUF file (wrong magic)",
    4: "unsupported GGUF version (2 and 3 are read)",
    5: "malformed GGUF header",
    6: "general.architecture is not 'qwen3'",
    7: "a required metadata key is missing",
    8: "a required tensor is missing",
    9: "unsupported tensor type (F32, F16 and BF16 are read)",
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
         10: "qwen3.attention.layer_norm_rms_epsilon", 11: "qwen3.context_length"}
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


class Qwen3:
    """A Qwen3 model loaded from a GGUF file into nx memory."""

    def __init__(self, path, backend: str = "c", checked: bool = True):
        import nxc
        self.path = os.fspath(path)
        self.nx = nxc.load(os.path.join(paths.bundled_dir(), "nx_gguf.nx"), backend=backend, checked=checked)
        raw = os.fsencode(self.path)
        if not raw or len(raw) > 4096 or b"\0" in raw:
            raise Qwen3Error(f"{self.path!r}: not a usable file name")
        name = np.frombuffer(raw, np.uint8).copy()
        self._g = self.nx.nx_gguf_new()
        self._m = self.nx.nx_qwen3_model_new()
        code = self.nx.nx_gguf_qwen3_from_file(name, len(name), self._g, self._m)
        if code != 0:
            msg = self._describe(code)
            self.close()            # frees what was loaded before the failure
            raise Qwen3Error(f"{self.path}: {msg}")
        c = [self.nx.nx_qwen3_config(self._m, k) for k in range(len(_CONFIG))]
        self.config = dict(zip(_CONFIG, c))
        self.config["rope_theta"] = float(_f32(np.array([c[8]]))[0])
        self.config["rms_eps"] = float(_f32(np.array([c[9]]))[0])

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
        if code in (8, 9, 10, 11, 13) or (code == 2 and g.err_role):
            if g.err_role:
                msg += f": {_tensor_name(g.err_role, g.err_layer)}"
        if code in (6, 7, 14) and g.err_key:
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

    def session(self, block_size: int = 16, n_blocks: int | None = None) -> "Session":
        """A paged KV-cache sequence for step-by-step decoding."""
        return Session(self, block_size, n_blocks)

    def generate(self, prompt, n_new: int, block_size: int = 16) -> list[int]:
        """Greedy continuation: the prompt in one paged step, then one token per step."""
        t = self._tokens(prompt)
        if n_new <= 0:
            return []
        with self.session(block_size, None) as s:
            out = np.zeros(n_new, np.int64)
            self._check(self.nx.nx_qwen3_generate(self._model(), s.seq, t, len(t), n_new, out), "generate")
            return [int(v) for v in out]


class Session:
    """A paged KV-cache sequence: step(tokens) runs them at the next positions."""

    def __init__(self, model: Qwen3, block_size: int, n_blocks: int | None):
        self.model = model
        ctx = model.config["n_ctx"] if model.config["n_ctx"] > 0 else 4096
        n_blocks = n_blocks or -(-ctx // block_size)
        self.seq = model.nx.nx_qwen3_seq_new(model._model(), block_size, n_blocks)
        if not self.seq:
            raise Qwen3Error("cannot allocate the KV cache")
        self.position = 0

    def step(self, tokens):
        """(hidden [n_layers + 1, T, hidden], out [T, hidden]) of these tokens, cached."""
        m = self.model
        t = m._tokens(tokens)
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


def load(path, backend: str = "c", checked: bool = True) -> Qwen3:
    """Load a Qwen3 GGUF (F32 / F16 / BF16 tensors) with the nx reader; raises Qwen3Error.
    checked=False: the C build without memory checks (faster: the packed linear kernel keeps
    its accumulators in registers only there; docs/performance.md)."""
    return Qwen3(path, backend, checked)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m nxc.models.qwen3",
                                 description="Run a Qwen3 GGUF with the bundled nx model: the last "
                                             "hidden state and a greedy continuation.")
    ap.add_argument("model", help="a Qwen3 GGUF file (F32, F16 or BF16 tensors)")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids, e.g. 1,2,3")
    ap.add_argument("--new", type=int, default=16, help="tokens to generate greedily (default 16)")
    ap.add_argument("--backend", choices=("c", "py"), default="c")
    args = ap.parse_args(argv)
    try:
        toks = [int(v) for v in args.tokens.split(",") if v.strip()]
    except ValueError:
        ap.error(f"--tokens must be comma-separated integers, not {args.tokens!r}")
    try:
        model = load(args.model, args.backend)
        _, out = model.forward(toks)
        gen = model.generate(toks, args.new)
    except Qwen3Error as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    c = model.config
    print(f"{args.model}: {c['n_layers']} layers, hidden {c['hidden']}, {c['n_heads']}/{c['n_kv_heads']} heads, "
          f"head_dim {c['head_dim']}, vocab {c['vocab']}")
    print("last hidden state (first 8):", np.array2string(out[-1][:8], precision=5))
    print("greedy:", ",".join(str(t) for t in gen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
