"""The Z-Image text encoder: a prompt in, Qwen3's hidden states out, as Z-Image's pipeline
computes them (diffusers, src/diffusers/pipelines/z_image/pipeline_z_image.py,
`ZImagePipeline._encode_prompt`):

1. messages = [{"role": "user", "content": prompt}], rendered with the tokenizer's chat
   template, add_generation_prompt=True, enable_thinking=True. For Qwen3-4B's template that is
   exactly `<|im_start|>user\\n{prompt}<|im_end|>\\n<|im_start|>assistant\\n` (with
   enable_thinking=True the template adds no `<think>` block; only enable_thinking=False
   appends an empty one);
2. tokenized, special tokens parsed, no BOS, truncated to max_sequence_length = 512 tokens;
3. the text encoder run with output_hidden_states=True and `hidden_states[-2]` taken: the
   output of the next-to-last decoder layer, before any final norm (HF's list holds the
   embeddings, each layer's output, and the final-normed last layer in place of the last
   layer's raw output; so [-2] is layer n_layers - 1's output, nx's hidden_all[n_layers - 1]);
4. the rows of the real tokens kept (the pipeline pads to 512 and drops the padded rows with
   the attention mask; with causal attention and padding on the right the real tokens never
   see the padding, so running the prompt's tokens alone gives the same rows).

The template comes from the file (`tokenizer.chat_template`, rendered by jinja2 in a
sandbox, as transformers renders it); a file without one gets Qwen3's text above.

    from nxc.models import qwen3
    enc = qwen3.text_encoder("Qwen3-4B-Q8_0.gguf")
    emb = enc.encode("a photo of a cat")          # float32 [n_tokens, hidden]

    python -m nxc.models.qwen3 encode MODEL.gguf "a photo of a cat" -o emb.npy

This module is the pipeline's part only (template, tokens, which hidden state); the model is
any object with Qwen3's `config` and `forward` (nxc/models/qwen3.py, which loads both from
one file and holds the command line), so the model does not depend on its users.
"""
from __future__ import annotations

import json

import numpy as np

from nxc.models.tokenizer import Tokenizer, TokenizerError

MAX_SEQUENCE_LENGTH = 512          # ZImagePipeline's default max_sequence_length
Z_IMAGE_LAYER = -2                 # hidden_states[-2]
# Qwen3's chat template for one user turn and the generation prompt, enable_thinking=True.
QWEN3_USER_TURN = "<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"


class EncoderError(ValueError):
    """The prompt, the layer, the template or the file cannot give embeddings."""


def render_chat_template(template: str, messages: list[dict], *, add_generation_prompt: bool = True,
                         enable_thinking: bool = True, **extra) -> str:
    """A Hugging Face chat template rendered as transformers does: jinja2's sandbox,
    trim_blocks and lstrip_blocks, the loopcontrols extension, `tojson` and
    `raise_exception`."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise EncoderError(f"the chat template refused: {message}")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = lambda v, indent=None, **_: json.dumps(v, ensure_ascii=False, indent=indent)
    env.globals["raise_exception"] = raise_exception
    try:
        return env.from_string(template).render(messages=messages, add_generation_prompt=add_generation_prompt,
                                                enable_thinking=enable_thinking, **extra)
    except jinja2.TemplateError as e:
        raise EncoderError(f"the chat template cannot be rendered: {e}") from None


def hf_hidden_states(hidden: np.ndarray, out: np.ndarray) -> list[np.ndarray]:
    """Hugging Face's `output_hidden_states` list from nx's forward: the embeddings and each
    layer's output, the last layer's replaced by the final-normed states."""
    return [hidden[i] for i in range(hidden.shape[0] - 1)] + [out]


class TextEncoder:
    """Qwen3 + its tokenizer, giving Z-Image's prompt embeddings."""

    def __init__(self, model, tokenizer: Tokenizer, *, max_length: int = MAX_SEQUENCE_LENGTH,
                 layer: int = Z_IMAGE_LAYER):
        if tokenizer.vocab_size != model.config["vocab"]:
            raise EncoderError(f"the tokenizer has {tokenizer.vocab_size} tokens, the model's embedding "
                               f"{model.config['vocab']} rows")
        if max_length <= 0:
            raise EncoderError(f"max_length must be positive, not {max_length}")
        self.model, self.tokenizer = model, tokenizer
        self.max_length = max_length
        self.layer = self._check_layer(layer)

    def _check_layer(self, layer: int) -> int:
        n = self.model.config["n_layers"] + 1              # entries of HF's hidden_states
        if not -n <= layer < n:
            raise EncoderError(f"layer {layer}: hidden_states has {n} entries (-{n} .. {n - 1})")
        return layer

    def template(self, prompt: str) -> str:
        """The text Z-Image's pipeline tokenizes for `prompt`."""
        if not isinstance(prompt, str):
            raise EncoderError(f"the prompt must be a str, not {type(prompt).__name__}")
        tpl = self.tokenizer.chat_template
        if not tpl:
            return QWEN3_USER_TURN.format(prompt=prompt)
        tok = self.tokenizer
        names = {k: tok.id_to_token(i) for k, i in (("bos_token", tok.bos_id), ("eos_token", tok.eos_id))
                 if i is not None}
        return render_chat_template(tpl, [{"role": "user", "content": prompt}], add_generation_prompt=True,
                                    enable_thinking=True, **names)

    def tokens(self, prompt: str) -> list[int]:
        """The token ids the encoder runs: the templated prompt, truncated to max_length."""
        return self.tokenizer.encode(self.template(prompt), special=True, add_bos=False)[: self.max_length]

    def encode(self, prompt: str, layer: int | None = None) -> np.ndarray:
        """float32 [n_tokens, hidden]: hidden_states[layer] (default -2) of the prompt's tokens."""
        ids = self.tokens(prompt)
        hidden, out = self.model.forward(ids, causal=True)
        states = hf_hidden_states(hidden, out)
        return states[self._check_layer(self.layer if layer is None else layer)]
