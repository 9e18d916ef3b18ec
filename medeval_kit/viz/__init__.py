"""Every plot in the package. Each plot function takes a tidy result table (what the analysis layer
returns) and ``ax=None``, draws in the house style (``figures.paper_style``: journal sizes, colour-blind
palette) and returns the matplotlib Figure; ``save_figure`` writes PDF/PNG/SVG with a JSON provenance
sidecar. Plots never compute statistics: they only draw what they are given."""

from . import agreement, aspects, bias, calibration, generate, judge, overview, psychometrics, rank, rounds  # noqa: E402
from .agreement import *  # noqa: F401,F403
from .aspects import *  # noqa: F401,F403
from .bias import *  # noqa: F401,F403
from .calibration import *  # noqa: F401,F403
from .figures import DOUBLE_COLUMN, PALETTE, SINGLE_COLUMN, data_hash, figure, paper_style, save_figure, save_plotly  # noqa: F401 - data_hash: the old path, kept
from .generate import *  # noqa: F401,F403
from .judge import *  # noqa: F401,F403
from .overview import *  # noqa: F401,F403
from .psychometrics import *  # noqa: F401,F403
from .rank import *  # noqa: F401,F403
from .rounds import *  # noqa: F401,F403

__all__ = ["SINGLE_COLUMN", "DOUBLE_COLUMN", "PALETTE", "paper_style", "figure", "save_figure", "save_plotly",
           *agreement.__all__, *bias.__all__, *judge.__all__, *overview.__all__, *rounds.__all__,
           *generate.__all__, *rank.__all__, *calibration.__all__,
           *psychometrics.__all__, *aspects.__all__]
