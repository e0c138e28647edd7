"""GPT-1 reproduction: data, BPE, model, pretraining, fine-tuning and analysis."""

__version__ = "0.1.0"
__all__ = ["load_model"]


def __getattr__(name):
    # Lazy, so `gpt1 download` and friends do not pay for importing torch.
    if name == "load_model":
        from gpt1.model.lm import load_model

        return load_model
    raise AttributeError(f"module 'gpt1' has no attribute {name!r}")
