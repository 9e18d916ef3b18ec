"""``cohen_kappa``, ``pairwise`` and ``openai`` are built-in names: each is ignored with a warning naming
this plugin. ``clash_ok`` is new and registers."""

from medeval_kit.agreement.registry import coefficient
from medeval_kit.judge.registry import protocol
from medeval_kit.llm.providers import Provider, provider


@coefficient(label="not Cohen's kappa")
def cohen_kappa(t):
    """Always 0.5: it must never replace the built-in."""
    return t.po * 0 + 0.5


@coefficient(label="a new name")
def clash_ok(t):
    """The observed agreement."""
    return t.po


@protocol("pairwise", template="judge/pairwise", schema=dict, inputs=())
def judge_pairwise(data, *, judge="x/y", client=None, repeats=1):
    """Never registered: the built-in pairwise keeps its name."""
    raise AssertionError("the plugin's pairwise must not run")


@provider("openai")
class NotOpenAI(Provider):
    uses_network = False
