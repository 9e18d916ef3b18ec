"""medeval_kit: evaluate LLMs as generators and judges in medicine."""

__version__ = "0.1.0"
