"""Token estimate for the simulated context window (SPEC §4: "an estimate is fine if documented").

The estimate is **one token per 4 bytes of UTF-8, rounded up**: ``ceil(len(utf8) / 4)``,
so any non-empty text counts at least 1 token and the empty text 0. Four bytes per token
is the usual rule of thumb for English with the SentencePiece/BPE tokenizers of Gemini-class
models; counting UTF-8 bytes rather than characters makes non-Latin scripts (whose
characters take 2 to 4 bytes, and often a token each) count more, which errs on the side of
the window filling up early — the cautious direction for a warning about forgotten values.
It is deterministic and needs no model vocabulary.
"""

from __future__ import annotations

BYTES_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """Estimated tokens of `text`: ``ceil(utf8_bytes / 4)``; 0 for ``""``, at least 1 otherwise."""
    if not text:
        return 0
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return -(-size // BYTES_PER_TOKEN)
