"""The networks: the GPT-1 decoder and the LSTM baseline, task heads, input transformations, weights I/O."""
