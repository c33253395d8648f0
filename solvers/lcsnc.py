"""SNC and LC-SNC: supervised normalized cut with label confidence and noise flags.

Implements Nitayanont, "A Graph-based Learning Method and Its Capability to Handle Label
Noise" (report, 2022), built on Hochbaum's normalized cut HNC (Hochbaum 2009) and its
supervised form SNC (Baumann, Hochbaum & Yang 2019):

- HNC(lambda), section 2.1, Fig. 1: minimise ``C(S, S̄) - lambda * d(S)``; the source arcs grow
  linearly with lambda, so every lambda of a list is one parametric min cut
  (``solvers._parametric_cut``).
- SNC, section 2.2, Fig. 2: positive labels contracted into the source, negative labels into
  the sink; each unlabelled node i gets ``s -> i`` of capacity ``lambda * d_i``.
- LC-SNC, section 3.1, Figs. 3-4: the labelled nodes stay in the graph with finite seed arcs
  ``s -> l`` of capacity ``c * conf_s(l)`` (positive labels) and ``l -> t`` of capacity
  ``c * conf_t(l)`` (negative labels), conf from section 3.1: constant, local mean
  (Mitani & Hamamoto 2006) or kNN agreement; the ensemble is their majority vote.
- Class balance (primed variants), section 3.2, f(S): minimise
  ``C(S,S̄) - lambda_s d(S) - lambda_t d(S̄)``, i.e. a signed ``mu = lambda_s - lambda_t``:
  ``mu > 0`` puts ``mu * d_i`` on ``s -> i``, ``mu < 0`` puts ``|mu| * d_i`` on ``i -> t``.
  Both signs are one parametric sweep: ``s -> i`` gets ``(K + mu) d_i`` and ``i -> t``
  gets ``K d_i`` with ``K = max |mu|``; this differs from the signed graph by the constant
  ``K d(U)`` (exactly one of the two arcs of each unlabelled node is cut).
- Noise flags, section 4.4.3: a given label whose node the cut puts on the other side.
- Graph, section 4.2: z-scored features, random-forest feature-importance-weighted
  Euclidean distance, symmetric kNN sparsification (section 2.2), Gaussian weights.
- Tuning, section 4.3: stratified K-fold cross-validation on the labelled nodes only, scored
  against the observed (possibly noisy) labels, grids of Tables 1-2 (section 4.1).

Open decisions (notes' list, then the ones met while implementing) and the choice made:

1. Feature scaling (graph="knn" and the feature confidences): z-score over all nodes (it
   uses no label).
2. Feature importance: a random forest (``n_trees`` trees, ``random_state``) fitted on the
   observed labels of the labelled nodes of the current fit (training folds inside CV, so
   no validation label leaks); importances sum to 1; distance ``sqrt(sum_f FI_f dx_f^2)``,
   i.e. the paper's formula divided by ``sqrt(m)`` (with it, most Gaussian weights would
   underflow at eps in {0.5, 1, 2}). ``feature_weights="uniform"`` gives plain Euclidean.
3. Edge weights: symmetric kNN union (j in kNN(i) or i in kNN(j)) with the plain kernel
   ``exp(-dist^2 / (2 eps^2))`` once per pair; d_i = row sum.
4. lambda arcs on unlabelled nodes only (paper's figures), not on labelled ones.
5. Seed capacity ``c * conf`` (paper), not the author code's ``k * c * conf``.
6. Confidence neighbours: the same k as the graph, among the labelled nodes of the current
   fit, the node itself excluded, same weighted distance as the graph. Local mean uses the
   k nearest of each class (all of them when a class has fewer); ``a / (a + b)`` is
   computed as a logistic of the squared-distance difference, so it never divides 0 by 0.
   Without features (``problem.X is None``), "knn" uses the graph instead: the weighted
   share of a node's labelled graph neighbours carrying its label (1 when it has none),
   and "local_mean" is unavailable (ValueError).
7. Class balance: mu from +-lambda grid (0 excluded), both signs tried exhaustively.
8. CV: ``cv=5`` stratified folds; the validation fold acts as unlabelled nodes and the real
   unlabelled nodes stay in the graph (``cv_graph="all"``, transductive like every solver
   here) or are left out (``cv_graph="labeled"``, the author code's reading); score =
   ``scoring`` ("accuracy" or "balanced_accuracy") on the validation fold; the grid over
   (k, eps, c) is exhaustive (``n_iter=None``) or ``n_iter`` random draws; lambda is
   always swept in full (one parametric cut). By default (``n_iter="auto"``) the search
   has the paper's size, section 4.3's randomized search of 60 candidates (λ, c, k, ε):
   60 // (the λ values one sweep scores) draws of (k, eps, c), so 15 with Table 2's four
   λ, 7 with class balance's eight signed ones, 60 with the multi-class path rule (no λ
   tuned, decision 13); every setting when the grid has no more (without features k and
   eps do nothing: the 6 values of c). Why not the full grid (144 settings with features,
   the default until 2026-12-07): 2.4-9.6× the paper's search for no better choice. On
   WDBC (28 labels a class) and digits (10 a class), 10% flipped, with features
   (``python -m bench lcsnc_search``, ``bench/results/lcsnc_search.md``), both searches
   found the same best CV score in all 15 paired runs; the default took 0.39 (WDBC) and
   0.48 (digits) of the full grid's time, with accuracy −0.02 and −0.12 points on average
   (at most 1.24 on one digits seed) and flag precision / recall 0.758 / 0.750 against
   0.795 / 0.750 on WDBC, 0.925 / 0.700 against 0.912 / 0.740 on digits: which of the
   tied settings is taken moves them, not the search. Ties of the CV score go to a random candidate
   (seeded by ``random_state``), like the paper's randomized search, rather than to the
   first of the grid (which would favour the smallest k, eps, c and lambda).
9. SNC gets the class-balance option too when asked (``class_balance=True``); by default
   it is off for every variant, as in the unprimed models.
10. Ensemble flags: majority of the three members' flags; multi-class votes with three
    different labels go to the kNN-confidence member (the paper's best single variant).
11. Ties in the cut: the minimal source set (nodes reachable from s in the residual graph).
12. "Add a neighbour" rule of the author code: not applied.
13. Multi-class: one-vs-rest, one cut per class with shared hyperparameters (tuned on the
    multi-class CV score). ``multiclass="path"`` (default): each class's minimal source
    sets along the whole λ range ``PATH_RANGE`` = [1e-6, 1] come from one exact
    parametric pseudoflow run (``_parametric_cut.entry_parameters``), and a node goes to
    the class whose source set it enters at the smallest λ (at λ = 1 every unlabelled
    node has entered: its λ arc outweighs its edges). No λ is tuned (the CV tunes c,
    k, eps on these labels). Why: hard memberships at one λ leave nodes unclaimed or
    claimed twice, and on kNN graphs the λ path jumps from the seeds to whole clusters,
    so the old rule (``multiclass="cut"``: the claiming class, ties and unclaimed nodes
    by the share of the λ grid, of which Table 2 has 4 values) scored 0.70 on digits (10
    per class, 10% flipped, 10-NN) and 0.82 with 6 random draws; the path rule scores
    0.934 (5 seeds, 0.87-0.97), 18-25 s a run on 2 cores. A grid of 21 λ values read
    with PyMaxflow tied 10-20% of the nodes between classes; the exact entry values
    tied none. Two classes: a single cut with class 1 as the positive (source) class at
    the tuned λ, as in the paper (the WDBC numbers are unchanged).
14. Scores and confidence: ``scores[i, c]`` = the share of the λ path on which node i is on
    class c's side: with ``"path"`` the share of the log-λ range above its entry value,
    log(1/λ_entry) / log(1/1e-6); with ``"cut"`` the fraction of the λ grid values (binary:
    source side for class 1, sink side for 0), at the chosen (k, eps, c). ``confidence``
    = the score of the predicted label: how stable the label is along the λ path.
15. Graph: ``graph="given"`` cuts ``problem.W`` (k and eps then only shape the feature
    confidences); ``graph="knn"`` builds the paper's graph from ``problem.X`` for every
    (k, eps) and ignores ``problem.W``. Unreachable nodes are judged on the graph cut.
17. Noise score (for ranking; the flag stays the paper's: the cut overrules the label):
    the margin of the best other class over the given one in the sweep scores of
    decision 14, i.e. how much more of the λ path puts the node on another class's side.
    A flagged label has a positive score at the tuned λ's cut; the score ranks within.
16. Backend: ``backend="maxflow"`` (PyMaxflow, one max flow per lambda) by default. On
    bench/lcsnc.py (8 signed lambdas, kNN graphs, 2 shared cores) it beat the one-pass
    parametric pseudoflow by 1.4x at 569 nodes, 10x at 10k and 81x at 100k (648 s against
    8 s): libhpf computes every breakpoint of the lambda range (1,635 at 100k) when only
    the grid's 4-8 values are needed. ``"pseudoflow"`` gives the same cuts (tested).
18. Degenerate labellings: the cut can put nearly every node on one side, most often
    because no (λ, c) of the grid separates the classes on the graph and the CV
    accuracy of predicting the larger class is the best it finds. On
    ``bench/hard_data.py``'s diabetes (z-scored, 10-NN, 10% labelled, seeds 0-2) the tuned
    cut put 95-100% of the nodes in the negative class (accuracy 0.645-0.647, chance
    0.650) at CV accuracies 0.673, 0.649, 0.701 against the labels' majority shares 0.657,
    0.634, 0.701; tuned for balanced accuracy the best CV scores were 0.53-0.56 and the
    accuracies the same. The labels stay (the method's answer); when one class takes at
    least 95% of the unlabelled nodes while holding less of the given labels, a
    ``DegenerateLabelingWarning`` says so with the CV score, and ``info["degenerate"]``
    holds the shares.
19. Processes (not in the paper; ``n_jobs``): the tuning's cv × settings runs are
    independent, and so are the final cut's classes, but libhpf keeps its network in C
    globals, so they cannot share a process on threads; they go to worker processes
    (``solvers/_worker_processes.py``) when the first one says the rest would take 8 s or
    more here. A tuning task is one fold and setting with all its classes (a class's path
    alone, 0.12 s at 20,000 nodes, is too short to pay for sending the graph). Measured on
    ``bench/hard_data.py``'s "overlap" at 10% labelled (20,000 nodes, 6 settings × 5
    folds, ``time_limit=None``, the 2-core VM): 39.3 s in one process, 24.8 s with two,
    the same labels, scores, flags and choice. On segment (6.9 s in all) the first task
    projects less than 8 s and the call stays in its process. The budget is checked before
    each task is handed out, so a stop drops the tasks queued (a worker finishes the one it
    has; up to two per worker are out at a time). After the first task the tuning projects
    the others at its pace, shared over the processes they would run on, and stops at once
    when that passes the budget (``SolverTimeLimit``, "which would take about ... s more").
    The projection leaves out building the tasks (the forests, the confidences) and that a
    second process adds 1.6×, not 2×, so it errs short: a tuning it lets start stops at the
    budget as before. On a generated 20,000-record CSV (16 features, 4 classes, 991 labels,
    300 runs) ``graphlabel label --solver lcsnc`` stopped after 0.67 s projecting 63 s more,
    where it used to stop after 30 s; without a limit the solve took 104 s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from itertools import product

import numpy as np
import scipy.sparse as sp
from sklearn.model_selection import StratifiedKFold
from sklearn.neighbors import NearestNeighbors

from ._budget import UNLIMITED, Budget
from ._graph import margin_scores, one_class_takes_all, per_label, unreachable, warn_degenerate
from ._parametric_cut import BACKENDS, entry_parameters, parametric_min_cut, resolve_backend
from ._timing import Stopwatch
from ._validation import TIME_LIMIT, Integral, Interval, Options, validate_params
from ._worker_processes import in_order, worker_count
from .problem import LabelProblem, Prediction

LAMBDA_GRID = tuple(4.0 ** np.arange(-4, 0))  # Table 2
C_GRID = tuple(2.0 ** np.arange(-1, 5))
K_GRID = (1, 2, 3, 4, 8, 12, 16, 20)
EPS_GRID = (0.5, 1.0, 2.0)
VARIANTS = ("snc", "lc")
CONFIDENCES = ("constant", "local_mean", "knn", "ensemble")
SCORINGS = ("accuracy", "balanced_accuracy")
GRAPHS = ("given", "knn")
CV_GRAPHS = ("all", "labeled")
FEATURE_WEIGHTS = ("forest", "uniform")
ENSEMBLE_MEMBERS = ("constant", "local_mean", "knn")
MULTICLASS = ("path", "cut")
# The λ range of the path rule: at λ = 1 an unlabelled node's source arc (λ d_i) outweighs
# all its edges, so every unlabelled node has entered some class by then.
PATH_RANGE = (1e-6, 1.0)
#: Candidates (λ, c, k, ε) of the paper's randomized search (section 4.3; decision 8).
PAPER_CANDIDATES = 60
PARAMETER_CONSTRAINTS = {
    "variant": [Options(VARIANTS)],
    "confidence": [Options(CONFIDENCES)],
    "class_balance": [Options((True, False))],
    "graph": [Options(GRAPHS)],
    "cv": [Interval(Integral, 2, None)],
    "scoring": [Options(SCORINGS)],
    "n_iter": [None, Options(("auto",)), Interval(Integral, 1, None)],
    "cv_graph": [Options(CV_GRAPHS)],
    "feature_weights": [Options(FEATURE_WEIGHTS)],
    "n_trees": [Interval(Integral, 1, None)],
    "backend": [Options(BACKENDS)],
    "multiclass": [Options(MULTICLASS)],
    "random_state": [None, Interval(Integral)],
    "time_limit": TIME_LIMIT,
    "n_jobs": [None, Interval(Integral, 1, None)],
}


def lcsnc(
    problem: LabelProblem,
    variant: str = "lc",
    confidence: str = "knn",
    class_balance: bool = False,
    lam: float | None = None,
    c: float | None = None,
    k: int | None = None,
    eps: float | None = None,
    graph: str = "given",
    lam_grid=LAMBDA_GRID,
    c_grid=C_GRID,
    k_grid=K_GRID,
    eps_grid=EPS_GRID,
    cv: int = 5,
    scoring: str = "accuracy",
    n_iter: int | str | None = "auto",
    cv_graph: str = "all",
    feature_weights: str = "forest",
    n_trees: int = 100,
    backend: str = "maxflow",
    multiclass: str = "path",
    random_state: int = 0,
    time_limit: float | str | None = "auto",
    n_jobs: int | None = None,
) -> Prediction:
    """Label nodes with SNC or LC-SNC and flag given labels the cut overrules.

    Parameters
    ----------
    problem : LabelProblem
        ``problem.X`` is needed for ``graph="knn"`` and for ``confidence="local_mean"``
        (and ``"ensemble"``, which includes it).
    variant : {"lc", "snc"}
        "snc": given labels are hard seeds (section 2.2, Fig. 2), nothing is flagged.
        "lc": label-confidence seeds of capacity ``c * conf`` (section 3.1, Fig. 4).
    confidence : {"knn", "constant", "local_mean", "ensemble"}
        LC-knn, LC-c, LC-lm (section 3.1) or LC-ens (section 4.1), the majority vote of the three, each
        tuned on its own. Ignored by "snc".
    class_balance : bool
        Primed models (section 3.2): lambda is signed, a negative value attaches the
        unlabelled lambda-arcs to the sink.
    lam, c, k, eps : float or int, optional
        Fix a hyperparameter instead of tuning it over its grid. ``lam`` may be negative
        only with ``class_balance``. ``k``/``eps`` are the kNN size and Gaussian bandwidth
        of the graph (``graph="knn"``) and of the feature confidences.
    graph : {"given", "knn"}
        Cut ``problem.W``, or build the paper's symmetric kNN graph from ``problem.X`` with
        feature-importance-weighted distances (section 4.2) for each (k, eps).
    lam_grid, c_grid, k_grid, eps_grid : sequences
        Grids of Table 2 by default.
    cv : int
        Number of stratified folds over the labelled nodes (>= 2).
    scoring : {"accuracy", "balanced_accuracy"}
        CV criterion, against the observed labels.
    n_iter : "auto", int or None, default "auto"
        Random (k, eps, c) draws instead of the full grid (lambda is always swept in full).
        "auto": the paper's 60 candidates (decision 8), i.e. ``PAPER_CANDIDATES`` // the
        λ values a sweep scores; None: every setting of the grid.
    cv_graph : {"all", "labeled"}
        Keep the real unlabelled nodes in the CV graphs, or cut the labelled subgraph only.
    feature_weights : {"forest", "uniform"}
        Random-forest importance weights on the features, or none.
    n_trees : int
        Trees of that forest.
    backend : {"maxflow", "pseudoflow", "auto"}
        Min-cut library (see ``solvers._parametric_cut``).
    multiclass : {"path", "cut"}
        More than two classes (decision 13): each node goes to the class whose
        one-vs-rest source set it enters at the smallest λ on the exact parametric path
        (``"path"``, λ-free), or to the class claiming it in the cuts at the tuned λ
        (``"cut"``). Two classes: the paper's single cut either way.
    random_state : int
        Seed of the folds, of the random draws and of the forest.
    time_limit : "auto", float > 0, None or "none", default "auto"
        Seconds the call may take (``SolverTimeLimit`` when spent), checked before each
        fold and hyperparameter setting of the tuning and each class's cut or parametric
        path of the final cut (decision 19). "auto": 10× an estimate of the harmonic solve
        of the given graph, at least 30 s (solvers/_budget.py); no limit with
        ``graph="knn"`` on a problem without a graph (nothing to time); None or "none": no limit.
    n_jobs : int, optional
        Processes for the independent cuts: the tuning's fold × setting runs, and the final
        cut's classes (``solvers/_worker_processes.py``). None: the CPUs this process may use
        (``OMP_NUM_THREADS`` if set, at most 8). The first run is timed here, and the rest go
        to worker processes only when they would take ``MIN_SECONDS`` (8 s) or more in this
        one: starting the workers costs about 2.5 s. 1: every cut in this process. The
        results are the same either way.

    Returns
    -------
    Prediction
        ``labels`` from the cut at the tuned lambda; ``scores[i, c]`` the fraction of the
        lambda grid at which node i sits on class c's side; ``confidence`` the score of the
        predicted class; ``noisy`` the given labels the cut overrules; ``info`` holds the
        chosen hyperparameters, the CV score, the members of an ensemble and timings.

    Raises
    ------
    ValueError
        On an unknown option, an empty or invalid grid, a fixed value out of range, or a
        feature-based option without ``problem.X``.

    References
    ----------
    S. Nitayanont, "A Graph-based Learning Method and Its Capability to Handle Label
    Noise", 2022 (sections 2.1-4.4). D. S. Hochbaum, "Polynomial time algorithms for ratio
    regions and a variant of normalized cut", IEEE TPAMI 32(5), 2010. P. Baumann,
    D. S. Hochbaum, Y. T. Yang, "A comparative study of the leading machine learning
    techniques and two new optimization algorithms", EJOR 272(3), 2019.
    """
    validate_params(
        {"variant": variant, "confidence": confidence, "class_balance": class_balance, "graph": graph, "cv": cv,
         "scoring": scoring, "n_iter": n_iter, "cv_graph": cv_graph, "feature_weights": feature_weights,
         "n_trees": n_trees, "backend": backend, "multiclass": multiclass, "random_state": random_state,
         "time_limit": time_limit, "n_jobs": n_jobs}, PARAMETER_CONSTRAINTS)
    budget = Budget("lcsnc", time_limit, problem.W if problem.has_graph else None, problem.n_classes)
    opts = _Settings(
        variant=variant, confidence=confidence, class_balance=class_balance, graph=graph, cv=cv, scoring=scoring,
        cv_graph=cv_graph, feature_weights=feature_weights, n_trees=n_trees,
        backend=resolve_backend(backend), multiclass=multiclass, random_state=random_state, budget=budget,
        processes=worker_count(n_jobs),
        **_grids(problem, variant=variant, confidence=confidence, class_balance=class_balance, graph=graph,
                 multiclass=multiclass, cv=cv, n_iter=n_iter, fixed={"lam": lam, "c": c, "k": k, "eps": eps},
                 grids={"lam": lam_grid, "c": c_grid, "k": k_grid, "eps": eps_grid}))
    clock = Stopwatch()
    if variant == "lc" and confidence == "ensemble":
        shared: dict = {}  # the members see the same folds: forest and neighbours computed once
        members = {name: _fit_one(problem, replace(opts, confidence=name, shared=shared))
                   for name in ENSEMBLE_MEMBERS}
        labels, noisy, scores, info = _vote(problem, members)
    else:
        labels, noisy, scores, info = _fit_one(problem, opts)
    no_label = labels < 0
    conf = np.where(no_label, 0.0, scores[np.arange(len(labels)), np.maximum(labels, 0)])
    given = np.flatnonzero(problem.labeled)
    noise_score = None
    if variant == "lc":  # decision 17: SNC's seeds are hard, nothing to doubt
        noise_score = per_label(problem.n_nodes, problem.labeled, margin_scores(scores[given], problem.y[given]))
    info["degenerate"] = one_class_takes_all(labels, problem.y, problem.n_classes)
    if info["degenerate"]:
        warn_degenerate("lcsnc", info["degenerate"], _degenerate_reason(problem, opts, info))
    info["seconds"] = clock.elapsed
    info["time_limit_seconds"] = budget.limit
    info["n_jobs"] = opts.processes  # the processes its cuts could use (the first run decides: decision 19)
    params = {key: getattr(opts, key) for key in (
        "variant", "confidence", "class_balance", "graph", "cv", "scoring", "n_iter",
        "cv_graph", "feature_weights", "n_trees", "backend", "multiclass", "random_state")}
    params.update(info.get("chosen", {}))
    return Prediction(labels, np.clip(conf, 0.0, 1.0), noisy, scores, "lcsnc", params, info, noise_score)


def _degenerate_reason(problem: LabelProblem, opts: _Settings, info: dict) -> str:
    """Why an LC-SNC labelling can put nearly every node in one class (decision 18)."""
    given = problem.y[problem.labeled]
    majority = np.bincount(given).max() / len(given)
    score = info.get("cv_score", float("nan"))
    if np.isnan(score):
        found = "the fixed λ and c"
    else:
        found = (f"the best setting cross-validation found (CV {opts.scoring} {score:.3f}; the given labels' "
                 f"largest class holds {majority:.3f} of them)")
    return (f"The cut at {found} puts nearly every node on one side: on this graph the cut does not separate "
            "the classes, and tuning for accuracy rewards predicting the larger one. Try scoring="
            "'balanced_accuracy', class_balance=True, another graph, or another solver.")


# --------------------------------------------------------------------------- validation

@dataclass(frozen=True, eq=False)
class _Settings:
    """One ``lcsnc`` call's validated options and what follows from them."""

    variant: str
    confidence: str
    class_balance: bool
    graph: str
    cv: int
    scoring: str
    n_iter: int | None  # (k, eps, c) draws, "auto" resolved (decision 8); None: the full grid
    cv_graph: str
    feature_weights: str
    n_trees: int
    backend: str
    multiclass: str
    random_state: int
    grids: dict  # "lam", "c", "k", "eps" -> the values tried (one when fixed)
    lam_path: list  # the λ values the sweep scores are read along (decision 14)
    uses_k_eps: bool  # k and eps shape the graph or the confidences
    path: bool  # the multi-class path rule is used (decision 13)
    shared: dict | None = None  # the ensemble members' cache of forests and neighbours
    budget: Budget = UNLIMITED  # the call's time budget, checked between cuts (solvers/_budget.py)
    processes: int = 1  # processes the independent cuts may use (``n_jobs``)


def _grids(problem: LabelProblem, *, variant, confidence, class_balance, graph, multiclass, cv, n_iter,
           fixed: dict, grids: dict) -> dict:
    """The grids (a fixed value is a grid of one), checked against the problem, and the
    fields of ``_Settings`` that follow from them."""
    needs_x = graph == "knn" or (variant == "lc" and confidence in ("local_mean", "ensemble"))
    if needs_x and problem.X is None:
        raise ValueError(
            "graph='knn' and the 'local_mean' (so also 'ensemble') confidence need node features:"
            " problem.X is None (use graph='given' with confidence 'constant' or 'knn')")
    checked = {}
    for name, check in (
        ("lam", lambda v: v > 0),
        ("c", lambda v: v > 0),
        ("k", lambda v: v >= 1 and float(v).is_integer()),
        ("eps", lambda v: v > 0),
    ):
        values = [fixed[name]] if fixed[name] is not None else list(np.atleast_1d(grids[name]))
        if not values:
            raise ValueError(f"{name}_grid must not be empty")
        for v in values:
            if name == "lam" and class_balance:
                ok = v != 0 and np.isfinite(v)
            else:
                ok = np.isfinite(v) and check(v)
            if not ok:
                raise ValueError(f"invalid {name} value {v!r}"
                                 + (" (a negative lam needs class_balance=True)" if name == "lam" else ""))
        checked[name] = [int(v) for v in values] if name == "k" else [float(v) for v in values]
    n_lab = int(problem.labeled.sum())
    counts = np.bincount(problem.y[problem.labeled], minlength=problem.n_classes)
    # k and eps matter only where features are used (the graph confidence has neither)
    uses_k_eps = graph == "knn" or (variant == "lc" and confidence in ("local_mean", "ensemble")) or (
        variant == "lc" and confidence == "knn" and problem.X is not None)
    path = multiclass == "path" and problem.n_classes > 2 and not class_balance
    if uses_k_eps and max(checked["k"]) >= problem.n_nodes:
        raise ValueError(f"k must be smaller than the number of nodes ({problem.n_nodes})")
    needs_cv = ((len(checked["lam"]) > 1 and not path) or (class_balance and fixed["lam"] is None)
                or (variant == "lc" and len(checked["c"]) > 1)
                or (uses_k_eps and len(checked["k"]) * len(checked["eps"]) > 1))
    smallest = int(counts[counts > 0].min())
    if needs_cv and smallest < cv:
        # a class of one label cannot be split into folds: lowering cv does not help then
        lower = f"set cv={smallest}, or " if smallest >= 2 else ""
        raise ValueError(f"every labelled class needs at least cv={cv} labels for the tuning (smallest has "
                         f"{smallest}); {lower}give lam, c, k and eps one value each, which skips the tuning"
                         + ("" if smallest >= 2 else " (a class of one label has no folds)"))
    if needs_cv and n_lab < 2 * cv:
        raise ValueError(f"too few labelled nodes ({n_lab}) for cv={cv}")
    # The signed sweep covers both signs; an unprimed model only uses lam > 0.
    lams = sorted(set(abs(v) for v in checked["lam"]))
    if class_balance and fixed["lam"] is None:
        checked["lam"] = [-v for v in reversed(lams)] + lams
    # The lambda values the scores are measured along (decision 14), tuned or not.
    along = sorted(set(abs(float(v)) for v in np.atleast_1d(grids["lam"])))
    lam_path = ([-v for v in reversed(along)] if class_balance else []) + along
    if n_iter == "auto":  # the paper's search size (decision 8): one sweep scores every λ
        n_iter = max(1, PAPER_CANDIDATES // (1 if path else len(checked["lam"])))
    return {"grids": checked, "lam_path": lam_path, "uses_k_eps": uses_k_eps, "path": path, "n_iter": n_iter}


# --------------------------------------------------------------------------- features

def _features(X: np.ndarray, y: np.ndarray, *, feature_weights: str, n_trees: int, random_state) -> np.ndarray:
    """z-scored features scaled by sqrt(feature importance): Euclidean on them is the
    paper's weighted distance over sqrt(m) (decision 2)."""
    std = X.std(axis=0)
    Z = (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
    if feature_weights == "forest":
        from sklearn.ensemble import RandomForestClassifier

        lab = y >= 0
        forest = RandomForestClassifier(n_estimators=n_trees, random_state=random_state)
        importance = forest.fit(Z[lab], y[lab]).feature_importances_
        if importance.sum() > 0:  # all-leaf forests (no split found) carry no weighting
            Z = Z * np.sqrt(importance / importance.sum())
    return Z


def _neighbours(Z: np.ndarray, k: int, pool: np.ndarray | None = None, query: np.ndarray | None = None):
    """k nearest ``pool`` rows of each ``query`` row, the row itself excluded.

    Returns indices into Z and squared distances, both of shape (len(query), k') with
    k' = min(k, len(pool) - 1) when some query is in the pool, else min(k, len(pool)).
    """
    pool = np.arange(len(Z)) if pool is None else pool
    query = np.arange(len(Z)) if query is None else query
    k_eff = min(k, len(pool) - 1 if np.isin(query, pool).any() else len(pool))
    fetch = min(k_eff + 1, len(pool))
    dist, idx = NearestNeighbors(n_neighbors=fetch).fit(Z[pool]).kneighbors(Z[query])
    idx = pool[idx]
    keep = idx != query[:, None]
    # Rows that did not meet themselves (not in the pool, or hidden by duplicates) drop
    # their farthest extra neighbour instead.
    keep[keep.sum(axis=1) > k_eff, -1] = False
    return idx[keep].reshape(len(query), k_eff), dist[keep].reshape(len(query), k_eff) ** 2


def _knn_graph(nbr_idx: np.ndarray, nbr_sq: np.ndarray, k: int, eps: float) -> sp.csr_matrix:
    """Symmetric kNN union with Gaussian weights (decision 3)."""
    n = nbr_idx.shape[0]
    k = min(k, nbr_idx.shape[1])
    rows = np.repeat(np.arange(n), k)
    A = sp.csr_matrix((np.exp(-nbr_sq[:, :k].ravel() / (2 * eps**2)), (rows, nbr_idx[:, :k].ravel())),
                      shape=(n, n))
    A.eliminate_zeros()
    return A.maximum(A.T).tocsr()


# --------------------------------------------------------------------------- confidences

def _confidence(scheme: str, positive: np.ndarray, seeds: np.ndarray, Z, W, k, eps) -> np.ndarray:
    """conf of each seed node for its own (binary) side, section 3.1; 0 elsewhere.

    ``positive`` marks the seeds on the source side, ``seeds`` all labelled nodes.
    """
    conf = np.zeros(len(seeds))
    lab = np.flatnonzero(seeds)
    pos_lab = positive[lab]
    if scheme == "constant":
        conf[lab] = 1.0
    elif scheme == "knn" and Z is None:
        # No features: weighted agreement among the labelled graph neighbours (decision 6).
        Wl = W[:, lab][lab]
        same = np.asarray(Wl.multiply(pos_lab[:, None] == pos_lab[None, :]).sum(axis=1)).ravel()
        total = np.asarray(Wl.sum(axis=1)).ravel()
        conf[lab] = np.where(total > 0, same / np.where(total > 0, total, 1.0), 1.0)
    elif scheme == "knn":
        idx, _ = _neighbours(Z, k, pool=lab, query=lab)
        conf[lab] = (positive[idx] == pos_lab[:, None]).mean(axis=1)
    else:  # local mean (Mitani & Hamamoto 2006)
        sq = {side: _local_mean_sq(Z, k, lab[pos_lab == side], lab) for side in (True, False)}
        # a / (a + b) with a = exp(-d+^2 / 2eps^2), b = exp(-d-^2 / 2eps^2), never 0/0.
        own = np.where(pos_lab, sq[True], sq[False])
        other = np.where(pos_lab, sq[False], sq[True])
        with np.errstate(invalid="ignore", over="ignore"):
            gap = (other - own) / (2 * eps**2)
        gap = np.where(np.isnan(gap), 0.0, gap)  # both sides infinitely far: no evidence
        conf[lab] = 0.5 * (1.0 + np.tanh(np.clip(gap, -700, 700) / 2.0))
    return conf


def _local_mean_sq(Z, k, pool, query) -> np.ndarray:
    """Squared distance of each query row to the mean of its k nearest pool rows (itself
    excluded); infinite when nothing but itself is in the pool."""
    if len(pool) == 0:
        return np.full(len(query), np.inf)
    if len(pool) == 1:
        return np.where(query == pool[0], np.inf, ((Z[query] - Z[pool[0]]) ** 2).sum(axis=1))
    idx, _ = _neighbours(Z, k, pool=pool, query=query)
    return ((Z[query] - Z[idx].mean(axis=1)) ** 2).sum(axis=1)


# --------------------------------------------------------------------------- the cut

def _sweep(W, d, y_fit, positive_class, conf, c, lams, variant, backend):
    """Source-side membership of every node for each lambda in ``lams`` (signed allowed).

    ``y_fit`` holds the labels the cut may use (-1 elsewhere); ``conf`` the seed
    confidences for this binary problem (LC only).
    """
    lams = np.asarray(lams, dtype=float)
    shift = max(0.0, -lams.min())  # K of the signed sweep
    lab = y_fit >= 0
    pos = lab & (y_fit == positive_class)
    neg = lab & ~pos
    free = ~lab
    if variant == "snc":
        # Fig. 2: seeds contracted into the terminals; only unlabelled nodes remain.
        Wu = W[free][:, free]
        to_pos = np.asarray(W[free][:, pos].sum(axis=1)).ravel()
        to_neg = np.asarray(W[free][:, neg].sum(axis=1)).ravel()
        cuts, info = parametric_min_cut(Wu, to_pos, d[free], to_neg + shift * d[free], lams + shift, backend)
        out = np.zeros((len(lams), len(y_fit)), dtype=bool)
        out[:, pos] = True
        out[:, free] = cuts
        return out, info
    source_const = np.where(pos, c * conf, 0.0)
    sink = np.where(neg, c * conf, 0.0) + np.where(free, shift * d, 0.0)
    return parametric_min_cut(W, source_const, np.where(free, d, 0.0), sink, lams + shift, backend)


def _entry(W, d, y_fit, positive_class, conf, c, variant) -> np.ndarray:
    """The λ at which each node enters ``positive_class``'s minimal source set (decision 13,
    ``multiclass="path"``): exact, from one parametric pseudoflow run over ``PATH_RANGE``."""
    lo, hi = PATH_RANGE
    lab = y_fit >= 0
    pos = lab & (y_fit == positive_class)
    neg = lab & ~pos
    free = ~lab
    if variant == "snc":
        out = np.where(pos, lo, np.inf)
        Wu = W[free][:, free]
        to_pos = np.asarray(W[free][:, pos].sum(axis=1)).ravel()
        to_neg = np.asarray(W[free][:, neg].sum(axis=1)).ravel()
        out[free], _ = entry_parameters(Wu, to_pos, d[free], to_neg, lo, hi)
        return out
    entry, _ = entry_parameters(W, np.where(pos, c * conf, 0.0), np.where(free, d, 0.0),
                                np.where(neg, c * conf, 0.0), lo, hi)
    return entry


def _path_labels(W, y_fit, n_classes, opts, conf_by_class, c):
    """Labels and scores of the path rule: the class entered at the smallest λ; score =
    the share of the log-λ range on the class's side (decision 14 on the exact path)."""
    d = np.asarray(W.sum(axis=1)).ravel()
    tasks = ((W, d, y_fit, cls, conf_by_class.get(cls), c, opts.variant) for cls in range(n_classes))
    entry = np.column_stack(list(in_order(_entry, _entry, tasks, n_classes, opts.processes,
                                          lambda cls: opts.budget.check(f"the parametric path of class {cls}"))))
    lo, hi = PATH_RANGE
    with np.errstate(divide="ignore"):  # a class never entered: log(hi / inf) = -inf, score 0
        scores = np.clip(np.log(hi / np.maximum(entry, lo)) / np.log(hi / lo), 0.0, 1.0)
    return np.argmin(entry, axis=1).astype(np.int64), scores


def _class_sweeps(W, y_fit, n_classes, opts, conf_by_class, c, lams):
    """One sweep per one-vs-rest problem (a single one for two classes): list of
    (class, membership array of shape (len(lams), n))."""
    d = np.asarray(W.sum(axis=1)).ravel()
    positives = [1] if n_classes == 2 else list(range(n_classes))
    tasks = ((W, d, y_fit, cls, conf_by_class.get(cls), c, lams, opts.variant, opts.backend) for cls in positives)
    sweeps = in_order(_sweep, _sweep, tasks, len(positives), opts.processes,
                      lambda i: opts.budget.check(f"the λ sweep of class {positives[i]}"))
    return [(cls, member) for cls, (member, _) in zip(positives, sweeps)]


def _labels_from(sweeps, n_classes: int, which: int):
    """Labels at the lambda index ``which`` and the sweep scores (decisions 13, 14)."""
    n = sweeps[0][1].shape[1]
    scores = np.zeros((n, n_classes))
    if n_classes == 2:
        share = sweeps[0][1].mean(axis=0)
        scores[:, 1], scores[:, 0] = share, 1.0 - share
        return sweeps[0][1][which].astype(np.int64), scores
    claims = np.zeros((n, n_classes), dtype=bool)
    for cls, member in sweeps:
        scores[:, cls] = member.mean(axis=0)
        claims[:, cls] = member[which]
    n_claims = claims.sum(axis=1)
    pick = np.where(claims, scores, -np.inf)
    pick[n_claims == 0] = scores[n_claims == 0]
    return np.argmax(pick, axis=1).astype(np.int64), scores


def _score(y_true, y_pred, scoring) -> float:
    if scoring == "accuracy":
        return float(np.mean(y_true == y_pred))
    classes = np.unique(y_true)
    return float(np.mean([np.mean(y_pred[y_true == cls] == cls) for cls in classes]))


# --------------------------------------------------------------------------- fit

def _setting(problem, y_fit, nodes, opts):
    """Graph, features and the (k, eps) loop pieces for one fit on the node subset ``nodes``.

    The three members of an ensemble see the same folds, so they share these through the
    per-call ``opts.shared`` cache (the forest and the neighbour search are the cost).
    """
    feature_conf = opts.variant == "lc" and opts.confidence in ("local_mean", "knn")
    need_z = problem.X is not None and (opts.graph == "knn" or feature_conf)
    key = (nodes.tobytes(), y_fit.tobytes(), need_z)
    shared = opts.shared
    if shared is not None and key in shared:
        return shared[key]
    Z = _features(problem.X[nodes], y_fit, feature_weights=opts.feature_weights, n_trees=opts.n_trees,
                  random_state=opts.random_state) if need_z else None
    if opts.graph == "knn":
        W = None
    else:
        W = problem.W if len(nodes) == problem.n_nodes else problem.W[nodes][:, nodes]
    nbrs = _neighbours(Z, max(opts.grids["k"])) if opts.graph == "knn" else None
    if shared is not None:
        shared[key] = (W, Z, nbrs)
    return W, Z, nbrs


def _graph_for(W, nbrs, k, eps):
    return W if nbrs is None else _knn_graph(nbrs[0], nbrs[1], k, eps)


def _conf_for(problem_classes, y_fit, Z, W, k, eps, opts):
    if opts.variant == "snc":
        return {}
    positives = [1] if problem_classes == 2 else range(problem_classes)
    lab = y_fit >= 0
    return {cls: _confidence(opts.confidence, y_fit == cls, lab, Z, W, k, eps) for cls in positives}


def _combos(opts):
    grids = opts.grids
    uses_k_eps = opts.uses_k_eps and (opts.graph == "knn" or opts.confidence != "ensemble")
    ks = grids["k"] if uses_k_eps else grids["k"][:1]
    epss = grids["eps"] if uses_k_eps else grids["eps"][:1]
    cs = grids["c"] if opts.variant == "lc" else [None]
    combos = list(product(ks, epss, cs))
    if opts.n_iter is not None and opts.n_iter < len(combos):
        rng = np.random.default_rng(opts.random_state)
        combos = [combos[i] for i in np.sort(rng.choice(len(combos), opts.n_iter, replace=False))]
    return combos


def _tune(problem, opts):
    """The chosen (k, eps, c) and λ, their CV score, and how many (k, eps, c) settings were scored."""
    combos = _combos(opts)
    lams = [None] if opts.path else opts.grids["lam"]
    if len(combos) == 1 and len(lams) == 1:
        return combos[0], lams[0], float("nan"), 0
    lab = np.flatnonzero(problem.labeled)
    folds = list(StratifiedKFold(opts.cv, shuffle=True, random_state=opts.random_state).split(lab, problem.y[lab]))
    totals = np.zeros((len(combos), len(lams)))
    # each fold × setting is one task, its classes' cuts in one process (here with the call's
    # budget between them, on a worker without); tasks come fold by fold, settings in order
    local = partial(_fold_scores, replace(opts, processes=1))
    worker = partial(_fold_scores, replace(opts, processes=1, budget=UNLIMITED, shared=None))
    count = len(folds) * len(combos)
    runs = in_order(local, worker, _tuning_tasks(problem, opts, combos, lams, folds, lab), count,
                    opts.processes, lambda i: opts.budget.check(
                        f"the tuning's fold {i // len(combos) + 1} of {len(folds)} with setting "
                        f"{i % len(combos) + 1} of {len(combos)}"),
                    # at the first run's pace (decision 19): a tuning that cannot fit stops at once
                    lambda seconds: opts.budget.check_next(
                        f"the tuning's other {count - 1} runs ({len(folds)} folds × {len(combos)} settings)", seconds))
    for i, scores in enumerate(runs):  # a loop over folds × hyperparameter values
        totals[i % len(combos)] += scores
    # Ties (frequent: validation folds are small and the labels noisy) go to a random
    # candidate, as in the paper's randomized search, not to the first of the grid.
    priority = np.random.default_rng(opts.random_state).permutation(totals.size).reshape(totals.shape)
    best = np.unravel_index(np.argmin(np.where(totals == totals.max(), priority, totals.size)), totals.shape)
    return combos[best[0]], lams[best[1]], float(totals[best] / opts.cv), len(combos)


def _tuning_tasks(problem, opts, combos, lams, folds, lab):
    """``_fold_scores``' arguments but its settings, per fold and hyperparameter values: the
    fold's graph (one (k, eps) graph held at a time) and confidences, its labels with the
    validation fold hidden, and what the validation is scored against."""
    for _, valid in folds:  # a loop over folds
        nodes = np.arange(problem.n_nodes) if opts.cv_graph == "all" else lab
        y_fit = problem.y[nodes].copy()
        valid_nodes = np.searchsorted(nodes, lab[valid])
        y_fit[valid_nodes] = -1
        truth = problem.y[lab[valid]]
        W0, Z, nbrs = _setting(problem, y_fit, nodes, opts)
        cache = {}
        for k, eps, c in combos:  # a loop over hyperparameter values
            if (k, eps) not in cache:
                Wk = _graph_for(W0, nbrs, k, eps)
                cache = {(k, eps): (Wk, _conf_for(problem.n_classes, y_fit, Z, Wk, k, eps, opts))}
            Wk, conf = cache[(k, eps)]
            yield Wk, y_fit, problem.n_classes, conf, c, lams, truth, valid_nodes


def _fold_scores(opts, W, y_fit, n_classes, conf, c, lams, truth, valid_nodes) -> np.ndarray:
    """One fold and setting's validation scores, one per λ of ``lams`` (one for the path rule)."""
    if opts.path:
        pred, _ = _path_labels(W, y_fit, n_classes, opts, conf, c)
        return np.array([_score(truth, pred[valid_nodes], opts.scoring)])
    sweeps = _class_sweeps(W, y_fit, n_classes, opts, conf, c, lams)
    return np.array([_score(truth, _labels_from(sweeps, n_classes, j)[0][valid_nodes], opts.scoring)
                     for j in range(len(lams))])  # a loop over lambda values


def _fit_one(problem: LabelProblem, opts: _Settings):
    """Tune (unless fixed), then cut the full problem: labels, flags, scores, info."""
    clock = Stopwatch()
    with clock("seconds_tuning"):
        (k, eps, c), lam, cv_score, settings = _tune(problem, opts)
    with clock("seconds_final_cut"):
        nodes = np.arange(problem.n_nodes)
        W0, Z, nbrs = _setting(problem, problem.y, nodes, opts)
        W = _graph_for(W0, nbrs, k, eps)
        conf = _conf_for(problem.n_classes, problem.y, Z, W, k, eps, opts)
        if opts.path:
            labels, scores = _path_labels(W, problem.y, problem.n_classes, opts, conf, c)
        else:
            lams = sorted(set(opts.lam_path) | {lam})
            sweeps = _class_sweeps(W, problem.y, problem.n_classes, opts, conf, c, lams)
            labels, scores = _labels_from(sweeps, problem.n_classes, lams.index(lam))
    given = problem.labeled
    noisy = given & (labels != problem.y) if opts.variant == "lc" else np.zeros(problem.n_nodes, bool)
    if opts.variant == "snc":
        labels[given] = problem.y[given]
    no_label = unreachable(W, given)
    labels[no_label] = -1
    scores[no_label] = 0.0
    noisy &= ~no_label
    chosen = {"lam": lam, "c": c, "k": k, "eps": eps}
    if opts.variant == "snc":
        chosen.pop("c")
    if not opts.uses_k_eps:
        chosen.pop("k"), chosen.pop("eps")
    if opts.path:
        chosen.pop("lam")  # the path rule uses the whole λ range, no tuned λ
    info = {
        "chosen": chosen,
        "cv_score": cv_score,
        "settings_tuned": settings,  # (k, eps, c) settings the tuning scored, each on every λ
        "sink_side": bool(lam is not None and lam < 0),
        "seed_confidence": conf,
        **clock.seconds,
    }
    return labels, noisy, scores, info


def _vote(problem: LabelProblem, members: dict):
    """LC-ens: majority of the three members' labels and flags (decision 10)."""
    labels = np.stack([m[0] for m in members.values()])  # (3, n), order of ENSEMBLE_MEMBERS
    C = problem.n_classes
    votes = np.zeros((labels.shape[1], C))
    for row in labels:  # three members
        ok = row >= 0
        votes[np.flatnonzero(ok), row[ok]] += 1
    majority = np.argmax(votes, axis=1)
    knn_member = labels[ENSEMBLE_MEMBERS.index("knn")]
    winner = np.where(votes.max(axis=1) >= 2, majority, knn_member)
    winner[(labels < 0).all(axis=0)] = -1
    noisy = np.stack([m[1] for m in members.values()]).sum(axis=0) >= 2
    scores = np.mean([m[2] for m in members.values()], axis=0)
    info = {
        "chosen": {},
        "members": {
            name: {"labels": m[0], "noisy": m[1], **{key: m[3][key] for key in ("chosen", "cv_score", "sink_side")}}
            for name, m in members.items()
        },
    }
    return winner.astype(np.int64), noisy, scores, info
