"""Placeholder: filled in by the issue that owns it."""


def register(sub, common) -> None:
    """Add this module's subcommands to the ``sl1conf`` parser (see cli.build_parser)."""
