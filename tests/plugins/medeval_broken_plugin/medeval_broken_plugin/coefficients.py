"""Registers one coefficient, then fails: the plugin is skipped and its coefficient taken back."""

from medeval_kit.agreement.registry import coefficient


@coefficient(label="registered before the failure")
def broken_half(t):
    """Half of the observed agreement."""
    return t.po / 2


raise RuntimeError("this plugin is broken on purpose")
