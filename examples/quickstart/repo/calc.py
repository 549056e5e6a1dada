"""A tiny calculator with a bug for hone's quickstart."""


def add(a, b):
    return a - b


def mul(a, b):
    return a * b
