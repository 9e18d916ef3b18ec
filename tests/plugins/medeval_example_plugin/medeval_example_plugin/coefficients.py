"""Maxwell's random-error coefficient, RE = 2 po - 1 (Maxwell 1977), as a ``labels`` coefficient: the
engine gives it the pair and many-rater forms and the item bootstrap like every built-in one."""

from medeval_kit.agreement.registry import coefficient


@coefficient(label="Maxwell's RE (example plugin)", weighted=False)
def example_maxwell_re(t):
    """Maxwell's RE: twice the observed agreement minus one."""
    return 2 * t.po - 1
