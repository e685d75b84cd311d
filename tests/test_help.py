"""Every command's --help describes every argument it takes (issue 16, item 10).

Walks the real parser: each option and positional argument of each subcommand (and of their
actions) has a description, no metavar is argparse's default from an internal name
(MERGE_OUT), and no help text carries reStructuredText markup from a docstring.
"""

from __future__ import annotations

import argparse

import pytest

from sl1conf.conformance.cli import build_parser, main


def _parsers():
    """(command words, parser) for the top level and every subcommand, depth first."""
    out, todo = [], [((), build_parser())]
    while todo:
        words, parser = todo.pop()
        out.append((words, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [((*words, name), sub) for name, sub in action.choices.items()]
    return out


PARSERS = _parsers()


@pytest.mark.parametrize("words, parser", PARSERS, ids=[" ".join(w) or "sl1conf" for w, _ in PARSERS])
def test_every_argument_is_described(words, parser):
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            continue
        name = "/".join(action.option_strings) or action.dest
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                assert choice.help, (words, choice.dest)
            continue
        assert action.help and action.help.strip(), f"sl1conf {' '.join(words)}: {name} has no description"
        assert "``" not in action.help and ":class:" not in action.help, (words, name, action.help)
        metavar = action.metavar
        if metavar is None and action.option_strings and action.nargs != 0:
            metavar = action.dest.upper()  # what argparse would print
            assert metavar == action.option_strings[-1].lstrip("-").replace("-", "_").upper(), (
                f"sl1conf {' '.join(words)}: {name} would show the internal name {metavar}")


@pytest.mark.parametrize("words, parser", PARSERS, ids=[" ".join(w) or "sl1conf" for w, _ in PARSERS])
def test_help_prints_and_exits_0(words, parser, capsys):
    with pytest.raises(SystemExit) as done:
        main([*words, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: sl1conf" + "".join(f" {w}" for w in words))
    assert "``" not in text and ":class:" not in text
