"""Where the data comes from and how it becomes examples: sources, loaders, the registry, splits, cleaning."""
