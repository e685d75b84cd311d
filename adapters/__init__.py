"""Implementations under test, behind one interface (the adapters issue fills this in)."""
