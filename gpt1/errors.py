"""The one exception type for mistakes a user can fix (bad params, bad data, missing files)."""


class UserError(Exception):
    """A problem in the user's input; the CLI prints the message alone, without a traceback, and exits with
    `exit_code`."""

    exit_code = 2
