"""The sl1conf command line (placeholder, filled in next)."""


def main(argv=None) -> int:
    return 0
