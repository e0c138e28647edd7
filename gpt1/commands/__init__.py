"""The tools: the commands that are not pipeline stages (table: tool_table.py), each a module with `add_arguments`
and `main(args, params)`, and the work of those that need more than a library call (benchmark, plan, generate,
predict, fetch-released)."""
