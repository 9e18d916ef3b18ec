"""Bradley-Terry and Davidson fits of pairwise count matrices, batched over bootstrap draws.

Counts are arrays ``W[b, i, j]`` (wins of model i over model j in draw b) and ``T[b, i, j]`` (ties,
symmetric). Strengths are log-strengths centred to mean zero over the fitted models.

* **Bradley-Terry** (P(i beats j) = 1 / (1 + exp(-(s_i - s_j)))) is fitted with the maintained ``choix``
  package (:func:`choix.ilsr_pairwise_dense`, iterative Luce spectral ranking, no regularisation). Its
  count matrix may hold fractions, so "a tie is half a win" needs no trick: ``W + T / 2``. Many problems at
  once (bootstrap draws) go to the batched Newton fit below instead (from equal strengths, like Davidson's):
  the same maximum (the tests check it against ``choix`` to 1e-9) without one ``choix`` call per draw.
* **Davidson (1970)** adds one tie parameter nu: P(i wins) : P(j wins) : P(tie) =
  a_i : a_j : nu * sqrt(a_i a_j). It is not in ``choix`` (no ties) nor ``statsmodels`` (not a GLM: the
  tie term couples both strengths through their geometric mean; R fits it with ``gnm`` via
  ``BradleyTerry2::GenDavidson`` or with ``PlackettLuce``), so it is a small maximum-likelihood fit here.
  The model is an exponential family in (log-strengths, log nu) (Firth, Kosmidis & Turner 2019,
  arXiv:1909.07123), so its log-likelihood is concave and Newton's method with step halving converges from
  equal strengths. It runs batched (one ``numpy.linalg.solve`` per iteration for all bootstrap draws):
  ``scipy.optimize.minimize`` solves one problem per call, about 100x slower for 1000 draws, and the tests
  cross-check this fit against it.

The maximum-likelihood estimate exists (is finite) only when the comparison graph is strongly connected
(every model both beats, or ties, and loses to, or ties, others along some path); :func:`connected` says so
and :func:`graph_problem` names the models that never win or never lose. Real designs often are not (MT-bench:
every pair includes one model, and some models never win). A ``prior`` (a precision lambda > 0) gives instead
the maximum a-posteriori estimate under independent Gaussian priors N(0, 1/lambda) on the log-strengths (log
nu flat): the penalised log-likelihood l(theta) - lambda/2 * sum(theta^2) is strictly concave, so it has one
finite maximum whatever the graph, shrunk toward equal strength (and mean zero, since l is shift-invariant).
Bradley-Terry with a prior equals ``choix.opt_pairwise(..., alpha=lambda / 2)`` (choix penalises
alpha * sum(theta^2)); the tests cross-check both fits.
Fisher information is computed exactly (exponential family: observed = expected) for Wald SEs.
"""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import connected_components

__all__ = ["TIES", "connected", "graph_problem", "fit_bradley_terry", "fit_davidson", "information",
           "outcome_probabilities"]

TIES = ("davidson", "half", "exclude")
"""How ties enter the fit: Davidson's tie parameter, half a win each, or dropped."""

_MAX_ITER = 100
_TOL = 1e-10


def connected(W: np.ndarray, T: np.ndarray | None = None) -> bool:
    """Whether the comparison graph (i -> j when i beat or tied j) is strongly connected.

    Parameters
    ----------
    W : numpy.ndarray
        (K, K) win counts: ``W[i, j]`` wins of i over j.
    T : numpy.ndarray, optional
        (K, K) tie counts; a tie links both ways.

    Returns
    -------
    bool
        True when every model can be reached from every other (a finite maximum-likelihood fit exists).

    Examples
    --------
    >>> import numpy as np
    >>> connected(np.array([[0, 1], [1, 0]])), connected(np.array([[0, 1], [0, 0]]))
    (True, False)
    """
    A = W > 0
    if T is not None:
        A = A | (T > 0)
    if A.shape[0] < 2:
        return False
    n, _ = connected_components(A.astype(np.int8), directed=True, connection="strong")
    return n == 1


def _connected_batch(W: np.ndarray, T: np.ndarray | None = None) -> np.ndarray:
    """Whether each of B comparison graphs ``W[b]`` (with ties ``T[b]``) is strongly connected, at once.

    The same answer as :func:`connected` per draw (a test checks it), without its per-graph call into
    ``scipy.sparse.csgraph``: the reachability matrix (I or A) is squared until it spans paths of K - 1
    steps; the graph is strongly connected when it has no zero.

    Parameters
    ----------
    W : numpy.ndarray
        (B, K, K) wins of i over j per draw.
    T : numpy.ndarray, optional
        (B, K, K) ties per draw; a tie links both ways.

    Returns
    -------
    numpy.ndarray
        (B,) booleans.
    """
    A = np.asarray(W) > 0
    if T is not None:
        A = A | (np.asarray(T) > 0)
    B, K = A.shape[0], A.shape[-1]
    if K < 2:
        return np.zeros(B, dtype=bool)
    R = (A | np.eye(K, dtype=bool)).astype(float)
    steps = 1
    while steps < K - 1:  # R covers paths of up to `steps` edges; squaring doubles that
        R = (R @ R > 0).astype(float)
        steps *= 2
    return (R > 0).all((1, 2))


def graph_problem(W: np.ndarray, T: np.ndarray | None = None, names=None) -> str:
    """Why the comparison graph is not strongly connected, in words ("" when it is).

    Parameters
    ----------
    W : numpy.ndarray
        (K, K) wins of i over j.
    T : numpy.ndarray, optional
        (K, K) ties (a tie links both models both ways).
    names : sequence of str, optional
        The models' names (default: their indices).

    Returns
    -------
    str
        The groups of models never compared with each other, the models that never win (nor tie) and those
        that never lose (nor tie); or, when no single model explains it, the group that never loses to the rest.

    Examples
    --------
    >>> W = np.array([[0, 3, 2], [1, 0, 0], [0, 0, 0]])   # x beats w and y, w beats x, y never wins
    >>> graph_problem(W, names=["x", "w", "y"])
    'never win: y'
    >>> W = np.array([[0, 2, 1, 1], [1, 0, 1, 1], [0, 0, 0, 1], [0, 0, 1, 0]])
    >>> graph_problem(W, names=["a", "b", "c", "d"])
    'a, b never lose to c, d'
    """
    A = np.asarray(W) > 0
    if T is not None:
        A = A | (np.asarray(T) > 0)
    K = A.shape[0]
    names = [str(n) for n in (names if names is not None else range(K))]
    if K < 2:
        return "fewer than two models"
    if connected(A.astype(float)):
        return ""
    parts = []
    n_weak, lab = connected_components((A | A.T).astype(np.int8), directed=False)
    if n_weak > 1:
        groups = [", ".join(names[i] for i in np.flatnonzero(lab == g)) for g in range(n_weak)]
        parts.append(f"the models fall into {n_weak} groups never compared with each other: " + " | ".join(groups))
    never_win = [names[i] for i in range(K) if not A[i].any()]
    never_lose = [names[i] for i in range(K) if not A[:, i].any()]
    if never_win:
        parts.append("never win: " + ", ".join(never_win))
    if never_lose:
        parts.append("never lose: " + ", ".join(never_lose))
    if n_weak == 1 and not (never_win or never_lose):  # no one model explains it: the group that never loses
        n_s, comp = connected_components(A.astype(np.int8), directed=True, connection="strong")
        for c in range(n_s):
            inside = comp == c
            if (~inside).any() and not A[np.ix_(~inside, inside)].any():  # nothing outside beats (or ties) it
                who = ", ".join(names[i] for i in np.flatnonzero(inside))
                rest = ", ".join(names[i] for i in np.flatnonzero(~inside))
                parts.append(f"{who} never lose to {rest}")
    return "; ".join(parts)


def fit_bradley_terry(W: np.ndarray, *, start: np.ndarray | None = None, max_iter: int = 1000,
                      tol: float = 1e-12, prior: float | None = None) -> np.ndarray:
    """Return mean-zero Bradley-Terry log-strengths of one (K, K) win matrix (NaN when no finite MLE exists).

    Parameters
    ----------
    W : numpy.ndarray
        (K, K) win counts: ``W[i, j]`` wins of i over j (fractions allowed).
    start : numpy.ndarray, optional
        Starting log-strengths.
    max_iter : int, default 1000
        Iteration limit of the solver.
    tol : float, default 1e-12
        Convergence tolerance.
    prior : float, optional
        A precision lambda > 0: the maximum a-posteriori estimate under N(0, 1/lambda) priors on the
        log-strengths, finite whatever the comparison graph (equal to ``choix.opt_pairwise`` with
        ``alpha = lambda / 2``).

    Returns
    -------
    numpy.ndarray
        (K,) mean-zero log-strengths; all NaN when no finite MLE exists.

    Examples
    --------
    >>> import numpy as np
    >>> theta = fit_bradley_terry(np.array([[0, 3], [1, 0]]))
    >>> round(float(theta[0] - theta[1]), 4)  # log(3/1)
    1.0986
    """
    import choix

    W = np.asarray(W, dtype=float)
    K = W.shape[0]
    if prior:
        theta, _, conv = _newton(W[None], None, max_iter=_MAX_ITER, tol=_TOL, prior=prior)
        return theta[0] if conv[0] else np.full(K, np.nan)
    if not connected(W):
        return np.full(K, np.nan)
    theta = choix.ilsr_pairwise_dense(W, alpha=0.0, initial_params=start, max_iter=max_iter, tol=tol)
    return theta - theta.mean()


def _fit_bradley_terry_batch(W: np.ndarray, *, start: np.ndarray | None = None) -> np.ndarray:
    """Mean-zero Bradley-Terry log-strengths of B win matrices (B, K, K) at once; NaN where no finite MLE.

    One problem goes to :func:`fit_bradley_terry` (``choix``, from ``start``). Several (bootstrap draws) go
    to one batched Newton fit (:func:`_newton`, from equal strengths, model 0 held at 0, then centred), which
    reaches the same maximum: the tests check it equals ``choix`` to 1e-9 (on the bundled PandaLM draws the
    largest difference is about 3e-13, and no rank changes), in a fraction of the time of one ``choix`` call
    per draw. Starting from equal strengths keeps an exact tie exact (two models with equal records get
    equal strengths, as with ``choix``); a warm start from the full-data fit would split it by rounding.
    Draws whose graph is not strongly connected (:func:`connected`) are NaN, as with ``choix``.

    Parameters
    ----------
    W : numpy.ndarray
        (B, K, K) win counts per draw (fractions allowed).
    start : numpy.ndarray, optional
        (K,) starting log-strengths of the single-problem ``choix`` fit.

    Returns
    -------
    numpy.ndarray
        (B, K) mean-zero log-strengths; a row of NaN where no finite MLE exists (or Newton did not converge).
    """
    W = np.asarray(W, dtype=float)
    B, K, _ = W.shape
    if B == 1:
        return fit_bradley_terry(W[0], start=start)[None]
    theta = np.full((B, K), np.nan)
    sel = np.flatnonzero(_connected_batch(W))
    if sel.size:
        t, _, conv = _newton(W[sel], None, max_iter=_MAX_ITER, tol=_TOL)
        t[~conv] = np.nan
        theta[sel] = t
    return theta


def _pairs(K: int) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays (i, j) of the pairs i < j."""
    i, j = np.triu_indices(K, 1)
    return i, j


def _pair_terms(theta: np.ndarray, lam: np.ndarray | None, I: np.ndarray, J: np.ndarray):
    """Per draw and pair: log-probabilities of (i wins, j wins, tie) under the current parameters."""
    a, b = theta[:, I], theta[:, J]
    if lam is None:
        z = np.stack([a, b], axis=-1)
    else:
        z = np.stack([a, b, lam[:, None] + (a + b) / 2], axis=-1)
    zmax = z.max(-1, keepdims=True)
    logp = z - (zmax + np.log(np.exp(z - zmax).sum(-1, keepdims=True)))
    return logp


def _stats(with_tie: bool) -> np.ndarray:
    """Sufficient statistics of each outcome in (s_i, s_j, log nu) coordinates."""
    return np.array([[1.0, 0, 0], [0, 1.0, 0], [0.5, 0.5, 1.0]]) if with_tie else np.array([[1.0, 0], [0, 1.0]])


def _loglik(theta, lam, n_obs, I, J) -> np.ndarray:
    """Log-likelihood per draw; ``n_obs[b, p, k]`` counts outcome k of pair p."""
    return (n_obs * _pair_terms(theta, lam, I, J)).sum((-1, -2))


def _grad_info(theta, lam, n_obs, I, J, K: int):
    """Score and Fisher information per draw over (s_1..s_K[, log nu])."""
    with_tie = lam is not None
    S = _stats(with_tie)
    p = np.exp(_pair_terms(theta, lam, I, J))  # (B, P, k)
    n = n_obs.sum(-1)  # (B, P)
    mean = p @ S  # (B, P, c)
    obs = n_obs @ S
    g_pair = obs - n[..., None] * mean
    cov = np.einsum("bpk,kc,kd->bpcd", p, S, S) - mean[..., :, None] * mean[..., None, :]
    info_pair = n[..., None, None] * cov
    B, P = p.shape[:2]
    dim = K + (1 if with_tie else 0)
    idx = np.stack([I, J] + ([np.full(P, K)] if with_tie else []), axis=-1)  # (P, c)
    g = np.zeros((B, dim))
    info = np.zeros((B, dim, dim))
    for c in range(idx.shape[1]):
        np.add.at(g, (slice(None), idx[:, c]), g_pair[..., c])
        for d in range(idx.shape[1]):
            np.add.at(info, (slice(None), idx[:, c], idx[:, d]), info_pair[..., c, d])
    return g, info


def _outcome_counts(W: np.ndarray, T: np.ndarray | None, I, J) -> np.ndarray:
    """(B, P, k) counts of (i wins, j wins[, tie]) per pair i < j."""
    cols = [W[:, I, J], W[:, J, I]] + ([T[:, I, J]] if T is not None else [])
    return np.stack(cols, axis=-1).astype(float)


def fit_davidson(W: np.ndarray, T: np.ndarray, *, max_iter: int = _MAX_ITER, tol: float = _TOL,
                 prior: float | None = None):
    """Return (log-strengths (B, K) mean-zero, log nu (B,), converged (B,)) of Davidson fits, batched over draws.

    ``W`` and ``T`` are (K, K) or (B, K, K). Draws without a finite MLE (graph not strongly connected, or
    all outcomes ties) are NaN; draws without any tie have nu = 0 (log nu = -inf) and Bradley-Terry
    strengths.

    Parameters
    ----------
    W : numpy.ndarray
        Win counts, (K, K) or (B, K, K): ``W[..., i, j]`` wins of i over j.
    T : numpy.ndarray
        Tie counts of the same shape (symmetric).
    max_iter : int
        Newton iteration limit.
    tol : float
        Convergence tolerance.
    prior : float, optional
        A precision lambda > 0: the maximum a-posteriori estimate under N(0, 1/lambda) priors on the
        log-strengths (log nu flat), finite whatever the graph; only a draw without any win (all ties:
        nu unbounded) stays NaN.

    Returns
    -------
    tuple of numpy.ndarray
        ``(theta, log_nu, converged)``: (B, K) mean-zero log-strengths, (B,) log tie parameters and (B,)
        convergence flags (B = 1 for (K, K) input).
    """
    W = np.asarray(W, dtype=float)
    T = np.asarray(T, dtype=float)
    if W.ndim == 2:
        W, T = W[None], T[None]
    B, K, _ = W.shape
    theta = np.full((B, K), np.nan)
    lam = np.full(B, np.nan)
    conv = np.zeros(B, dtype=bool)
    ok = np.ones(B, dtype=bool) if prior else _connected_batch(W, T)
    n_tie = T.sum((1, 2)) / 2
    n_win = W.sum((1, 2))
    ok &= n_win > 0
    with_tie = ok & (n_tie > 0)
    no_tie = ok & (n_tie == 0)
    if prior and no_tie.any():  # Bradley-Terry with the prior, batched
        sel = np.flatnonzero(no_tie)
        theta[sel], _, conv[sel] = _newton(W[sel], None, max_iter=max_iter, tol=tol, prior=prior)
        lam[sel] = -np.inf
        theta[sel[~conv[sel]]] = np.nan
    if not prior and no_tie.any():  # Bradley-Terry: choix for one problem, a batched Newton fit for several
        sel = np.flatnonzero(no_tie)
        theta[sel] = _fit_bradley_terry_batch(W[sel])
        lam[sel] = -np.inf
        conv[sel] = np.isfinite(theta[sel]).all(1)
    sel = np.flatnonzero(with_tie)
    if sel.size:
        t, lm, c = _newton(W[sel], T[sel], max_iter=max_iter, tol=tol, prior=prior)
        theta[sel], lam[sel], conv[sel] = t, lm, c
    return theta, lam, conv


def _penalised(ll, theta, prior):
    """The log-likelihood minus the Gaussian prior's penalty prior/2 * sum(theta^2) (per draw)."""
    return ll - (prior / 2) * (theta ** 2).sum(-1) if prior else ll


def _newton(W, T, *, max_iter: int, tol: float, prior: float | None = None):
    """Batched Newton-Raphson with step halving for Davidson's model (``T`` None: Bradley-Terry).

    Without a prior, model 0 is held at 0 (the likelihood is shift-invariant), then the strengths are
    centred; with a prior every strength is free (the penalty makes the system definite) and the maximum is
    mean-zero by itself.
    """
    B, K, _ = W.shape
    I, J = _pairs(K)
    with_tie = T is not None
    n_obs = _outcome_counts(W, T, I, J)
    theta = np.zeros((B, K))
    if with_tie:
        # equal strengths: P(tie) = nu / (2 + nu), so start nu at the observed tie share
        n_tie, n_win = T.sum((1, 2)) / 2, W.sum((1, 2))
        share = n_tie / (n_tie + n_win)
        lam = np.log(2 * share / (1 - share))
    else:
        lam = None
    dim = K + (1 if with_tie else 0)
    pen = np.zeros(dim)
    pen[:K] = prior or 0.0
    free = np.r_[0:dim] if prior else np.r_[1:dim]  # without a prior model 0 is held at 0
    active = np.ones(B, dtype=bool)
    ll = _penalised(_loglik(theta, lam, n_obs, I, J), theta, prior)
    for _ in range(max_iter):
        a = np.flatnonzero(active)
        if a.size == 0:
            break
        la = lam[a] if with_tie else None
        g, info = _grad_info(theta[a], la, n_obs[a], I, J, K)
        g = g - pen * np.concatenate([theta[a], np.zeros((a.size, dim - K))], axis=1)
        info = info + np.diag(pen)
        step = np.linalg.solve(info[:, free[:, None], free[None, :]], g[:, free][..., None])[..., 0]
        full = np.zeros((a.size, dim))
        full[:, free] = step
        t_new = theta[a] + full[:, :K]
        l_new = lam[a] + full[:, K] if with_tie else None
        ll_new = _penalised(_loglik(t_new, l_new, n_obs[a], I, J), t_new, prior)
        for _half in range(30):  # step halving keeps every update uphill
            worse = ll_new < ll[a] - 1e-12
            if not worse.any():
                break
            full[worse] /= 2
            t_new[worse] = theta[a][worse] + full[worse, :K]
            if with_tie:
                l_new[worse] = lam[a][worse] + full[worse, K]
            ll_new[worse] = _penalised(_loglik(t_new[worse], l_new[worse] if with_tie else None, n_obs[a][worse],
                                               I, J), t_new[worse], prior)
        theta[a], ll[a] = t_new, ll_new
        if with_tie:
            lam[a] = l_new
        active[a[np.abs(full).max(1) < tol]] = False
    theta = theta - theta.mean(1, keepdims=True)
    return theta, (lam if with_tie else np.full(B, -np.inf)), ~active


def information(theta: np.ndarray, W: np.ndarray, T: np.ndarray | None = None,
                log_nu: float | None = None) -> np.ndarray:
    """Fisher information over (s_1..s_K[, log nu]) at one fit (Davidson when ``log_nu`` is given and finite).

    Parameters
    ----------
    theta : numpy.ndarray
        (K,) log-strengths.
    W : numpy.ndarray
        (K, K) win counts.
    T : numpy.ndarray, optional
        (K, K) tie counts (used with ``log_nu``).
    log_nu : float, optional
        Davidson's log tie parameter; None or not finite: Bradley-Terry.

    Returns
    -------
    numpy.ndarray
        The (K, K) or, with ties, (K + 1, K + 1) information matrix.
    """
    theta = np.asarray(theta, dtype=float)
    K = theta.size
    I, J = _pairs(K)
    tie = log_nu is not None and np.isfinite(log_nu)
    n_obs = _outcome_counts(np.asarray(W, float)[None], None if not tie else np.asarray(T, float)[None], I, J)
    _, info = _grad_info(theta[None], np.array([log_nu]) if tie else None, n_obs, I, J, K)
    return info[0]


def outcome_probabilities(theta: np.ndarray, log_nu: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Return (P(i beats j), P(i ties j)) as (..., K, K) arrays from log-strengths (and Davidson's log nu).

    Parameters
    ----------
    theta : numpy.ndarray
        Log-strengths, (..., K).
    log_nu : float or numpy.ndarray, optional
        Davidson's log tie parameter, a number or one per leading row of ``theta``; None or -inf (no
        ties) gives Bradley-Terry.

    Returns
    -------
    tuple of numpy.ndarray
        ``(p_win, p_tie)``, each (..., K, K): P(i beats j) and P(i ties j).

    Examples
    --------
    >>> import numpy as np
    >>> p_win, p_tie = outcome_probabilities(np.array([0.0, 0.0]))
    >>> float(p_win[0, 1]), float(p_tie[0, 1])
    (0.5, 0.0)
    """
    theta = np.asarray(theta, dtype=float)
    a, b = theta[..., :, None], theta[..., None, :]
    if log_nu is None:
        p_win = 1 / (1 + np.exp(-(a - b)))
        return p_win, np.zeros_like(p_win)
    ln = np.asarray(log_nu, dtype=float)[..., None, None]
    c = ln + (a + b) / 2
    z = np.stack(np.broadcast_arrays(a, b, c), axis=-1)
    zmax = z.max(-1, keepdims=True)
    p = np.exp(z - zmax) / np.exp(z - zmax).sum(-1, keepdims=True)
    return p[..., 0], p[..., 2]
