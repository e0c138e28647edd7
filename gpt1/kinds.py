"""The kinds of language model, named once: the GPT-1 Transformer and the LSTM baseline.

Plain names without torch, so the params schema, the output layout, Table 5's methods and the stages' options
can read them; gpt1/model/lm.py gives each its class and configuration (MODEL_KINDS).
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["transformer", "lstm"]
TRANSFORMER: Kind = "transformer"
LSTM: Kind = "lstm"
KINDS: tuple[Kind, ...] = (TRANSFORMER, LSTM)
DISPLAY_NAMES: dict[str, str] = {TRANSFORMER: "Transformer", LSTM: "LSTM"}  # as figures and tables name them
