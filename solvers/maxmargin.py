"""Max-margin graph cuts: a kernel SVM fit to the labels a regularised harmonic solution induces.

Kveton, Valko, Rahimi & Huang (2010) learn in two convex steps:

1. Sec. 2, eq. (5)-(6): the regularised harmonic solution on the similarity graph,
   ``(L_uu + γ_g I) ℓ_u = W_ul y_l`` with ``ℓ_l = y_l ∈ {-1, +1}``; ``sgn ℓ_i`` is the
   induced label and ``|ℓ_i|`` its confidence.
2. Sec. 3, eq. (7)-(8): a soft-margin kernel SVM (hinge loss + γ‖f‖²_K) on the points with
   ``|ℓ_i| ≥ ε`` and their induced labels. The SVM, not the graph, predicts; so it labels
   feature vectors that were never in the graph (entities ingested after the last graph
   build), and γ_g → ∞ reduces it to the supervised SVM on the labelled points.

``MaxMarginGraphCut`` is the estimator (``fit(problem)``, ``predict(X)``, ``predict_proba(X)``,
``decision_function(X)``; pickleable, so a flow can keep it); ``maxmargin(problem)`` is the
registry entry and returns the model's predictions for every node, model in
``info["model"]``. ``paper_bandwidth(X)`` is the paper's width √K·σ for the 5-NN graph
(Sec. 6.2) and the RBF kernel; build the graph with
``similarity.knn_graph(X, 5, weights="gaussian", sigma=paper_bandwidth(X))``.

Decisions the paper leaves open, and what this module does
-----------------------------------------------------------
- Graph: not built here (solvers do not import ``similarity``); the paper's graph is the
  Gaussian 5-NN above, union-symmetrised (knn_graph's default ``max``), raw features.
- σ (mean per-feature standard deviation) is computed on the ``X`` the model is fit on
  (all graph nodes, labelled and unlabelled), unless ``bandwidth`` is given.
- Binary problems follow the paper exactly: one right-hand side ``y_l = ±1`` (class 1 is
  +1), ``ℓ`` from eq. (6), induced label ``sgn ℓ``, kept iff ``|ℓ| ≥ ε`` and ``ℓ ≠ 0``
  (``sgn 0`` is no label; nodes no label can reach have ``ℓ = 0`` and are dropped).
- Multi-class (not in the paper): one-hot right-hand sides give absorption scores F (n × C);
  the induced label is ``argmax_c F_ic`` and its confidence the gap between the two largest
  columns, ``F_i(1) − F_i(2)``, kept iff ``≥ ε`` and ``> 0``. For C = 2 the gap is exactly
  ``|ℓ|`` (F_1 − F_0 = ℓ), so the rule is the paper's. The SVM is scikit-learn's ``SVC``
  (libsvm, as in the paper), which decomposes C classes one-vs-one, like the paper's
  pairwise experiments, but on the labels induced by one multi-class harmonic solution.
- γ ↔ C: libsvm minimises ½‖w‖² + C Σ ξ, i.e. eq. (7) divided by 2γ, so ``C = 1/(2γ)``;
  the paper tunes γ ∈ [0.01, 0.1]·n_l. libsvm's unregularised bias b (absent from eq. 8) is
  kept.
- Kernels: ``linear`` ⟨x, z⟩; ``rbf`` exp(−‖x − z‖²/(2s²)) with s = √K·σ (the paper's "width
  set accordingly"); ``cubic`` (⟨x, z⟩/s² + 1)³ (the paper gives no offset or scale; scaling
  by the same width keeps kernel values O(1), so C means the same across kernels).
- Units (the paper leaves them open): ``problem.X`` is read as given, and the width comes
  from its spread, so a column in thousands is the whole kernel distance. graphlabel's
  flows give X in the units the graph was built in (its ``scale``; on wine as stored this
  solver scored 0.744 on the unlabelled nodes, 0.953 standardised:
  ``bench/maxmargin_units.py``).
- Per-label trust (``label_confidence``, not in the paper): a label of trust c is clamped
  to c·y_l (as in ``solvers.harmonic``) and is the SVM sample weight of that point; induced
  points weigh 1 (the paper's unweighted hinge loss).
- Confidence (not in the paper): per-class scores S from the SVM (binary: [−f, f];
  multi-class: each class's mean signed one-vs-one decision value, because SVC's
  one-vs-rest-shaped output is vote counts, useless as a confidence) go through a softmax
  with one temperature T (binary: sigmoid(2f/T), Platt scaling without its bias). T is fit
  on *cross-fitted* scores of the given labels: they are split into ``cv`` stratified folds
  and each fold's labels are hidden from both steps (harmonic and SVM) of a model that then
  scores them (its SVM trained on a sample of the induced labels, see Cross-fitting sample
  below); T minimises the cross-entropy to Platt's smoothed targets (N+1)/(N+2).
  Labels flagged noisy are left out of the final T. With ``cv=0`` or fewer than two labels
  in some class, T = 1 (uncalibrated). Why not ``SVC(probability=True)``: scikit-learn 1.9
  deprecates it, and its internal Platt fit would calibrate against induced labels the SVM
  agrees with by construction. A multinomial logistic regression on the scores over-fitted
  ~100 labels (ECE 0.12 on digits against 0.06 for one temperature).
- Labels: the SVM's own predictions, ``sgn f`` in the binary case (eq. 8), libsvm's
  one-vs-one vote otherwise (the arg-max of the mean pairwise scores erred more on digits:
  5.0% vs 4.2%); ``confidence`` is the calibrated probability of that label. A node whose
  given label is flagged (below) is predicted as the cross-fitted model predicts it, one that
  never saw that label, at its calibrated probability: the final SVM trains on the label and
  predicted it back at 13 of the 48 flagged nodes of ``python -m bench flagged_predictions
  --seeds 0-4`` (digits, 10 labels per class, 10% flipped; 40 predicted right), the
  cross-fitted model at none (43 right), as the other solvers predict a flagged node without
  its label (``labelling/scores.py``). ``scores`` stay the final model's probabilities.
- Noise flags (not in the paper), ``noise="graph_and_svm"`` (the default): a given label's
  ``noise_score`` is the smaller of two margins, each the best other class minus the given
  one: the cross-fitted model's (calibrated probabilities of a model that never saw the
  label, see Confidence) and the graph step's leave-one-out margin (``solvers._relaxation``:
  the harmonic function's, estimated without a solve per label); flagged from
  ``noise_threshold`` = 0.3. So the graph and the SVM must both doubt the label. The graph
  step's margin is taken at γ_g = 0 with class mass normalisation (the harmonic solver's
  defaults), not at this model's γ_g: on the development draws below, at γ_g = 1 the
  combined score ranked worse (average precision 0.93 against 0.96 on digits at 10%
  flipped, recall at precision 0.95 0.62 against 0.86). Why not the rule below, now
  ``noise="svm"``: the final model fits many flipped labels (C = 1 is a soft margin), so
  its training-error gate caps recall (development draws, seeds 0-4, not the benchmark's
  100-104, ``python -m bench noise_flags --skip-cost --methods maxmargin --seeds 0-4
  --ranking``: digits at 10% / 20% flipped 0.97 / 0.72 and 0.96 / 0.57), and its ranking
  score, the cross-fitted margin alone, ranks clean unusual handwriting among the flips
  (recall 0.04 at precision 0.95 on digits at 10%); it flagged 5.1% of segment's clean
  labels. The smaller margin ranks digits' flips at average precision 0.96 / 0.98 (10% /
  20%; the SVM's margin alone 0.86 / 0.89) and WDBC's at 0.90 / 0.85 (0.87 / 0.89).
  Flagging when either rule fires (the old flags or the combined score) flagged more than
  5% of segment's clean labels at every threshold tried. Threshold by the rule of
  ``solvers.mincut`` (decision 8): the multiple of 0.05 with the best mean F1 over the
  flipped development sets (digits, segment, WDBC at 10% and 20%) among those that flag at
  most 5% of every clean development set: 0.3 (clean labels flagged: digits 0.4%, segment
  4.6%, WDBC 1.4%; 0.25 flags 5.4% of segment's); F1 digits 0.89 / 0.88, WDBC 0.84 /
  0.69. The price: WDBC at 20% flipped, where the graph's leave-one-out misses flips that
  sit together, F1 0.69 against the old rule's 0.84 on these seeds. On the benchmark's
  seeds 100-104 (``bench/results/noise_flags_digits_segment_wdbc_cleanlab_maxmargin_mincut.md``):
  digits 10% precision / recall 0.98 / 0.84 (old rule 1.00 / 0.66), WDBC 20% F1 0.82
  (0.86; cleanlab 0.72), segment's clean labels 1.4% flagged (4.9%). ``noise="svm"``
  keeps the old rule.
  Cost: one harmonic solve on top of the cross-fitting.
- Noise flags, ``noise="svm"`` (the rule before; ``noise_threshold`` a probability,
  default 0.5): a given label is flagged when two models reject it: the
  cross-fitted model (one that never saw it) predicts another class with calibrated
  probability ≥ ``noise_threshold`` (default 0.5, as in ``solvers.harmonic``), and the
  final model, trained with the label (its node is clamped to it in eq. 6 and is a training
  point of eq. 7 with its given class), still predicts another class: a training error of
  the soft-margin fit (slack ξ > 1), a label the max-margin solution prefers to pay for
  rather than fit. Why both: the cross-fitted models see 80% of the labels, and on digits
  they misclassify 3-4% of the clean ones (unusual handwriting whose only examples are in
  the held-out fold); the final model keeps those. On the development draws (seeds 0-9,
  not the benchmark's 100-104; digits and segment 10 per class, WDBC 28) the cross-fitted
  rule alone flagged digits' 10% flips at precision / recall 0.75 / 0.97 and 3.7% of the
  clean labels, segment's clean labels at 24.9%, WDBC's at 5.0%; both rules together
  0.95 / 0.78 and 0.4%, 3.7%, 2.5% (digits with 20% flipped: 0.83 / 0.84 against
  0.98 / 0.62). The second rule depends on C: the harder the margin, the more flipped
  labels the final fit absorbs. On a digits split (1,200 nodes, 15 labels per class, 10%
  flipped, γ_g = 0.1) recall is 0.87 at C = 0.3 and 1, 0.67 at C = 3 and 0.27 at C = 10
  (precision 0.93-1.0); the paper's range, C = 1/(2γ) with γ ∈ [0.01, 0.1]·n_l, is
  C ≤ 0.33 there. With ``cv=0`` nothing is flagged (no model that never saw the label),
  and neither is a label that is the only one of its class in the run
  (``LabelProblem.lone_labels``: no model that never saw it knows its class).
  With ``drop_noisy`` the final model is refit with the flagged labels hidden (they then
  get induced labels like any unlabelled node). It is off by default, unlike
  ``solvers.harmonic``: on ten-class digits (10% labelled, ``bench/maxmargin.py --full``,
  under the cross-fitted rule alone) hiding the flags raised the held-out error from 3.7%
  to 6.5% with clean labels and from 5.5% to 6.7% with 10% flipped labels (flags:
  precision 0.65, recall 0.97), because the correct labels that rule flags are the lone
  examples of unusual handwriting (a class's sub-cluster), while a flipped label only
  damages its own neighbourhood.
- Noise score (for ranking, ``Prediction.noise_score``): the default rule's score above
  (the calibrator fitted on every given label gives the cross-fitted probabilities; the
  final one is refitted without the flagged labels); with ``noise="svm"``, the margin of
  the best other class over the given one in the final calibrator's cross-fitted
  probabilities, and the flag keeps that rule's own test (a flagged label also has a
  training error of the final model). NaN when ``cv=0`` (no flags).
- Cross-fitting sample (not in the paper; ``cv_sample``, default 2,000): a fold's SVM
  (eq. 7) trains on every given label of the other folds and, when the fold's harmonic
  step induces more labels than that on unlabelled nodes, on a uniform sample of
  ``cv_sample`` of them (drawn from ``random_state``), each weighted (induced count /
  ``cv_sample``) so that their hinge losses estimate the full sum of eq. (7); the final
  model trains on every induced label. Why: the fold models only score the held-out given
  labels and feed the temperature, yet each fold's SVM fit on every induced label cost as
  much as the final one. At 10k nodes (``python -m bench noise_flags --skip-quality
  --cost-methods maxmargin --cost-sizes 10000``: blobs, 100 labels, 10% flipped; medians
  of 3 on the shared 2-core machine, load average 1.9-2.7) the flags cost 9.25 s against
  4.42 s without them (2.09×) with every induced label in the folds, 4.47 s against 3.47 s
  (1.29×) with 2,000, 4.04 s against 2.95 s (1.37×) in a second run
  (``bench/results/noise_flags_cost_maxmargin_before.md``, ``_after.md``, ``_after_rerun.md``;
  the flagless fit, the same code in all three, moved from 4.42 to 2.95 s with the load);
  most of what is left is the five folds' harmonic solves.
  Flags: on the benchmark's draws (seeds 100-104, ``python -m bench noise_flags
  --skip-cost --methods maxmargin,cleanlab --data digits,segment,wdbc --flips 0,0.1,0.2
  --ranking``, ``bench/results/noise_flags_maxmargin_cleanlab_before.md``, ``_after.md``)
  the default rule's flags did not change (digits 10% F1 0.913, WDBC 20% 0.806, segment's
  clean labels 2.3% flagged; only segment's folds, about 2,240 unlabelled nodes, are
  sampled there); ``noise="svm"`` moved on segment (F1 at 10% / 20% flipped 0.577 / 0.474
  before, 0.559 / 0.441 after). Where the sample binds (``python -m bench
  maxmargin_cv_sample``, ``bench/results/maxmargin_cv_sample.md``): on the same draws at
  ``cv_sample=500`` (a quarter of digits' and segment's unlabelled nodes) the default
  rule's F1 was 0.913 / 0.865 on digits at 10% / 20% flipped (unsampled 0.913 / 0.870),
  0.581 / 0.469 on segment (0.571 / 0.501), 0.900 / 0.812 on WDBC (0.900 / 0.806), clean
  labels flagged at most 2.9% (segment; 2.3%); on 10k nodes of overlapping classes
  (``make_classification``, 32-d, 10 classes, class_sep 1.5, 30 labels per class, 10%
  flipped, five draws) F1 0.804 unsampled, 0.805 at 2,000, 0.790 at 1,000, 0.803 at 500.
  Calibration of ``predict_proba`` on the hidden labels got no worse: ECE / log-loss 0.086
  / 0.336 unsampled against 0.073 / 0.330 at 2,000 on those 10k nodes; digits at 10%
  flipped 0.056 / 0.209 against 0.037 / 0.196 at 500 (a sample gives a lower temperature,
  and the lower ECE and log-loss say the unsampled folds' one left the final model
  under-confident). Why the weights: they keep the folds' objective the final model's (an
  unweighted sample is a softer margin), so the temperature fitted on the folds stays
  nearest the unsampled one (digits at 10% flipped, cv_sample 500: T 0.209 weighted, 0.199
  unweighted, 0.230 unsampled; the 10k nodes at 2,000: 0.272, 0.239, 0.291); unweighted
  samples flagged as well (F1 0.807 at 2,000 on the 10k nodes, 0.530 against 0.469 on
  segment at 20% with 500). Not done: reusing the full solve's induced labels in the folds
  (the held-out labels would shape the neighbourhoods that then score them: no longer a
  model that never saw the label); fewer folds (``cv=3``) and warm-started fold solves,
  not tried: with the sample the folds' SVMs are no longer the cost, and each fold's
  harmonic solve (eq. 6) takes about 0.1 s at 10k nodes.
- Nodes that no labelled node can reach (including nodes with no edges, such as entities
  added after the last graph build) get the model's prediction and confidence, not label -1:
  they are *model* predictions, not graph ones, and ``info["graph_unreachable"]`` marks them.
  ``predict_unreachable=False`` restores the contract's -1 / confidence 0.
- Defaults γ_g = 1, C = 1 (not in the paper, which tunes γ ∈ [0.01, 0.1]·n_l and
  γ_g ∈ [10⁻³, 10³] on a validation set; callers with validation labels should too). With
  ε = 10⁻⁶ on a 5-NN graph, γ_g ≤ 10 keeps nearly every reachable node (|ℓ| decays
  geometrically per hop but stays above 10⁻⁶ for many hops).
- Cost: ``cv`` ≥ 2 fits ``cv`` + 1 models (harmonic solve and SVM each; the folds' SVMs on
  at most ``cv_sample`` induced labels, see Cross-fitting sample); use ``cv=0`` for one fit.
- Memory (not in the paper): the peak is the harmonic step's (eq. 6), ``PEAK_BLOCKS`` blocks
  of n × C float32, asked for at the door with two copies of the features and what libsvm's
  kernel cache (``cache_size``) can hold of one class pair's points (``solvers/_memory.py``).
  The SVM's one-vs-one decision values on the nodes, C(C − 1)/2 per node, are made a block
  of rows at a time (``DECISION_BLOCK_BYTES``), and the class scores are summed per class.
  ``python -m bench solver_memory --against CHECKOUT`` (20,000 nodes of 200 classes, blobs
  in 16-d, 10-NN, 5 labels per class; ``bench/results/solver_memory_20000_200.md``): the
  call's traced peak 605 blocks before (9.2 GiB; the process 9.3 GiB) and 8.7 after (132
  MiB; the process 348 MiB), 120 s and 92 s under load; the same accuracy.
  ``graphlabel label --solver maxmargin`` on 20,000 such nodes of 100 classes: maximum
  resident set 2.8 GB before, 0.53 GB after (39 s, 34 s; one run each, ad hoc). The same
  labels and flags; probabilities within 1e-12 (digits, WDBC, blobs of 40 classes).
- The harmonic solve is ``solvers.harmonic.harmonic_scores`` (SuperLU up to
  ``direct_max_nodes`` unknowns, AMG-preconditioned CG above).
- Degenerate labellings: when one class takes at least 95% of the unlabelled nodes while
  holding less of the given labels, a ``DegenerateLabelingWarning`` says so (with the
  induced labels per class) and ``info["degenerate"]`` holds the shares; no such run
  was met on ``bench/hard_data.py``'s sets, so no cause is named.

References
----------
Kveton, B., Valko, M., Rahimi, A., Huang, L. (2010). Semi-supervised learning with max-margin
graph cuts. AISTATS. Sec. 2 eq. (5)-(6), Sec. 3 eq. (7)-(8), Sec. 6.2.
Platt, J. (1999). Probabilistic outputs for support vector machines. Advances in Large
Margin Classifiers.
Zhu, X., Ghahramani, Z., Lafferty, J. (2003). Semi-supervised learning using Gaussian fields
and harmonic functions. ICML (the graph step's leave-one-out in the noise score).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.model_selection import StratifiedKFold
from sklearn.svm import SVC

from ._budget import UNLIMITED, Budget
from ._graph import margin_scores, one_class_takes_all, per_label, predict_flagged, unreachable, warn_degenerate
from ._memory import check_blocks
from ._relaxation import harmonic_loo_margin
from ._row_split_product import product_threads
from ._timing import Stopwatch
from ._validation import TIME_LIMIT, Integral, Interval, Options, Real, check_choice, validate_params
from .harmonic import SOLVERS, harmonic_scores
from .problem import LabelProblem, Prediction

KERNELS = ("linear", "cubic", "rbf")
# How given labels are flagged (module docstring, noise flags) and each rule's threshold when
# noise_threshold is None: a margin for "graph_and_svm", a probability for "svm".
NOISE_RULES = ("svm", "graph_and_svm")
DEFAULT_THRESHOLDS = {"svm": 0.5, "graph_and_svm": 0.3}
# Up to this many nodes the harmonic step (eq. 6) is solved by a sparse LU, above it by
# conjugate gradients: the harmonic solver's own threshold (1,000, solvers/harmonic.py says
# why: SuperLU's fill-in on 10-NN graphs is slower than CG from 2,000 nodes up). At 10,000,
# as before, `label --solver maxmargin` on 2,000 rows spent 2.1 of its 5.4 s factorising
# L_uu once per cross-fitting fold (6 times; bench/cli.py), where CG solves the 3
# right-hand sides in about 0.01 s.
DIRECT_MAX_NODES = 1_000
# time_limit: an SVM fit cannot be interrupted, so it is checked before it starts against its
# expected seconds, the previous fit's; the first fit of a call, on more than 2 × SVM_PROBE
# points, is projected from a fit on SVM_PROBE of them as probe × (n / SVM_PROBE)^SVM_EXPONENT.
# Measured on hard_data's 20k-node overlapping classes (RBF, paper width, one thread of a
# loaded 2-core machine): 0.042, 0.077, 0.209, 0.588 s on 500, 1,000, 2,000, 4,000 points
# (exponent 1.3-1.5, steepening as the support vectors grow) and about 17 s for the first
# fit on the 20k induced labels in bench/hard_data.py, 1.8 from 1,000 points; 1.75 fits both.
SVM_PROBE = 1_000
SVM_EXPONENT = 1.75
# The decision values on the graph's nodes, which maxmargin() computes after fit, cannot be
# interrupted either: per node the kernel against the l support vectors and, one-vs-one, a sum
# over the support vectors of every class pair, about l·(d + C − 1). With 100 classes
# (hard_data's "100 classes", 20,000 nodes, 10% labelled) they took 54 s after a 14 s fit,
# the call 75 s against a budget of 54 s. fit ends by checking the time spent plus their
# projection from PREDICT_PROBE nodes (linear: each node costs the same).
PREDICT_PROBE = 256
# One-vs-one decision values held at once (``_decision_blocks``): libsvm returns C(C − 1)/2
# of them per row, float64, so one call on every node of 20,000 at 200 classes was 3.2 GB,
# and with the votes and class scores made from them (and a pairs × C matrix of ±1)
# maxmargin's peak was 605 blocks of n × C float32, 9.2 GiB (module docstring, Memory).
# Blocks of rows keep them to about 3.3 times these bytes whatever the classes.
DECISION_BLOCK_BYTES = 16 * 2**20
#: n × C float32 blocks at fit's peak, the harmonic step's (eq. 6: float64 CG one class at a
#: time, with its right-hand sides and solution): 8.7 measured with tracemalloc at 20,000 nodes
#: of 200 classes (blobs, 10-NN, 5 labels per class), the decision values and graph included
#: (``python -m bench solver_memory``, ``bench/results/solver_memory_20000_200.md``). What
#: ``check_blocks`` asks for at the door, with the graph's copies (the harmonic step's), two
#: copies of the features (the SVM's training rows and libsvm's) and libsvm's kernel cache
#: (``cache_size``, or what one class pair's kernel columns can fill), which libsvm
#: allocates outside numpy.
PEAK_BLOCKS = 9
GRAPH_COPIES = 3
FEATURE_COPIES = 2
# Induced labels each cross-fitting fold's SVM trains on at most: the fold models only score
# the held-out given labels, and on every induced label each fold cost as much as the final fit
# (module docstring, Cross-fitting sample).
CV_SAMPLE = 2_000

PARAMETER_CONSTRAINTS = {
    "gamma_g": [Interval(Real, 0, None), Options((math.inf,))],  # ∞: the supervised SVM
    "epsilon": [Interval(Real, 0, None)],
    "kernel": [Options(KERNELS)],
    "C": [Interval(Real, 0, None, closed="neither")],
    "bandwidth": [None, Interval(Real, 0, None, closed="neither")],
    "cv": [Options((0,)), Interval(Integral, 2, None)],
    "cv_sample": [None, Interval(Integral, 1, None)],
    "noise_threshold": [None, Interval(Real, 0, 1, closed="right")],
    "noise": [Options(NOISE_RULES)],
    "drop_noisy": [Options((True, False))],
    "solver": [Options(SOLVERS)],
    "direct_max_nodes": [Interval(Integral, 0, None)],
    "cache_size": [Interval(Real, 0, None, closed="neither")],
    "random_state": [None, Interval(Integral)],
    "time_limit": TIME_LIMIT,
}


def paper_bandwidth(X: np.ndarray) -> float:
    """The width √K·σ of Kveton et al. (2010), Sec. 6.2: K features, σ their mean std.

    The 5-NN graph weight exp(−‖x_i − x_j‖²/(2Kσ²)) is knn_graph's gaussian weight with
    ``sigma=paper_bandwidth(X)``; the RBF kernel uses the same width.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"X must be a 2-D array with at least two rows, got shape {X.shape}")
    width = float(np.sqrt(X.shape[1]) * np.mean(np.std(X, axis=0)))
    return width if width > 0 else 1.0


def induce_labels(
    W: sp.spmatrix,
    y: np.ndarray,
    n_classes: int,
    *,
    gamma_g: float,
    epsilon: float = 1e-6,
    label_confidence: np.ndarray | None = None,
    solver: str = "auto",
    direct_max_nodes: int = DIRECT_MAX_NODES,
):
    """Labels induced by the regularised harmonic solution, eq. (6), thresholded at ε, eq. (7).

    Parameters
    ----------
    W : sparse matrix (n, n)
    y : array of int (n,), -1 for unlabelled
    n_classes : int
    gamma_g : float ≥ 0
    epsilon : float ≥ 0
    label_confidence : array (n,), optional
        Trust c of each given label; the label is clamped to c·y.
    solver, direct_max_nodes
        Passed to ``solvers.harmonic.harmonic_scores``.

    Returns
    -------
    induced : array of int (n,)
        Induced class, -1 where the confidence is below ε or zero.
    margin : array (n,)
        Binary: |ℓ_i|; multi-class: gap between the two largest absorption scores.
    """
    labeled = y >= 0
    trust = np.where(labeled, 1.0 if label_confidence is None else label_confidence, 0.0)
    if n_classes == 2:
        Y = (np.where(y == 1, 1.0, -1.0) * trust)[:, None]  # the paper's y_l = ±1
        ell = harmonic_scores(W, Y, labeled, gamma_g=gamma_g, solver=solver,
                              direct_max_nodes=direct_max_nodes)[0][:, 0]
        induced, margin = (ell > 0).astype(np.int64), np.abs(ell)
    else:
        Y_l = np.zeros((np.count_nonzero(labeled), n_classes))  # the labelled rows only
        Y_l[np.arange(len(Y_l)), y[labeled]] = trust[labeled]
        F = harmonic_scores(W, Y_l, labeled, gamma_g=gamma_g, solver=solver,
                            direct_max_nodes=direct_max_nodes)[0]
        # the top two in place: F is this call's own, and a partition copied it twice
        induced = F.argmax(axis=1)
        rows = np.arange(len(F))
        margin = F[rows, induced]
        F[rows, induced] = -np.inf
        margin -= F.max(axis=1)
        induced = induced.astype(np.int64)
    induced[(margin < epsilon) | (margin <= 0)] = -1
    return induced, margin


def _softmax(Z: np.ndarray) -> np.ndarray:
    E = np.exp(Z - Z.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def _class_scores(svm: SVC, D: np.ndarray) -> np.ndarray:
    """Per-class scores (m, C') from the SVM's decision values ``D`` (``svm.decision_function``).

    Binary: [−f, f]. One-vs-one: class c scores the mean of its C' − 1 pairwise decision
    values, signed towards c (SVC's one-vs-rest-shaped output is vote counts, whose top two
    differ by about one vote whatever the margins, so it cannot carry a confidence).
    Summed per class, not by a product with a pairs × C' matrix of ±1, which at 1,000
    classes is 4 GB of zeros.
    """
    if D.ndim == 1:
        return np.column_stack([-D, D])
    k = len(svm.classes_)
    first, second = np.triu_indices(k, 1)  # libsvm's pair order; positive favours `first`
    S = np.zeros((len(D), k))
    # the pairs (i, ·) are contiguous in that order; the pairs (·, j) after a stable sort
    S[:, :-1] = np.add.reduceat(D, np.flatnonzero(np.diff(first, prepend=-1)), axis=1)
    by_second = np.argsort(second, kind="stable")
    S[:, 1:] -= np.add.reduceat(D[:, by_second], np.searchsorted(second[by_second], np.arange(1, k)), axis=1)
    S /= k - 1
    return S


def _decision_blocks(svm: SVC, X: np.ndarray, threads: int | None = None):
    """``(rows, D)`` in the order of X's rows: the SVM's decision values, ``DECISION_BLOCK_BYTES``
    of them at a time (libsvm returns all C'(C' − 1)/2 one-vs-one values of a row), that block
    split over ``threads`` (default ``product_threads()``). libsvm's prediction releases the GIL
    (scikit-learn's ``_libsvm.decision_function`` runs it ``nogil``) and is most of a large
    prediction's time: each row's kernel against every support vector, on one core. Measured
    (``bench/hard_data.py``'s "overlap", 20,000 nodes, 10% labelled, ``time_limit=None``, ad
    hoc, 2 cores): the call 14.8 s with ``OMP_NUM_THREADS=1`` and 9.5 s on two threads, its six
    calls of libsvm's decision values 9.6 s on one; the same labels."""
    k = len(svm.classes_)
    threads = product_threads() if threads is None else threads
    block = max(1, DECISION_BLOCK_BYTES // (8 * max(1, k * (k - 1) // 2)))
    step = max(1, min(block // threads, -(-len(X) // threads)))  # the threads' rows: a block in all
    starts = range(0, len(X), step)
    if threads == 1 or len(starts) == 1:
        for start in starts:  # a loop over blocks of rows, for memory
            yield slice(start, start + step), svm.decision_function(X[start : start + step])
        return
    with ThreadPoolExecutor(threads) as pool:
        for wave in range(0, len(starts), threads):  # a block's worth of rows in flight at a time
            firsts = starts[wave : wave + threads]
            values = pool.map(lambda start: svm.decision_function(X[start : start + step]), firsts)
            for start, D in zip(firsts, values, strict=True):
                yield slice(start, start + step), D


def _class_scores_of(svm: SVC, X: np.ndarray) -> np.ndarray:
    """``_class_scores`` of X's rows, a block of decision values at a time."""
    S = np.empty((len(X), max(2, len(svm.classes_))))
    for rows, D in _decision_blocks(svm, X):
        S[rows] = _class_scores(svm, D)
    return S


def _vote(svm: SVC, D: np.ndarray) -> np.ndarray:
    """``svm.predict``'s classes from its decision values ``D`` (``decision_function``), so
    that labels and probabilities cost one kernel evaluation against the support vectors,
    not two (``svm.predict`` evaluates it again).

    libsvm's rule (``svm_predict_values``): the pair (i, j), i < j, votes for i when its
    decision value is > 0, else for j, and the class with the most votes wins, the first on a
    tie; for two classes sklearn reports −f, so f ≥ 0 is the second class.
    """
    if D.ndim == 1:
        return svm.classes_[(D >= 0).astype(np.intp)]
    k = len(svm.classes_)
    first, second = np.triu_indices(k, 1)  # libsvm's pair order, as in _class_scores
    winner = np.where(D > 0, first, second)
    votes = np.bincount((np.arange(len(D))[:, None] * k + winner).ravel(), minlength=len(D) * k).reshape(-1, k)
    return svm.classes_[np.argmax(votes, axis=1)]  # arg-max takes the first of tied counts


class TemperatureCalibrator:
    """p = softmax(S / T) of per-class scores S, T fitted to smoothed targets (Platt 1999).

    One parameter, so a few dozen given labels fit it without over-fitting. The target of a
    label's own class is (N + 1)/(N + 2) for N calibration labels (Platt's prior smoothing,
    the rest spread evenly on the other classes); it keeps T finite when the cross-fitted
    decisions separate the labels perfectly. Platt's per-class N_c (about 10 per digit class
    at 10% labels) capped the confidence near 0.92 and left it under-confident on digits.

    Parameters
    ----------
    classes : array of int
        The class of each logit column.
    """

    def __init__(self, classes: np.ndarray):
        self.classes = np.asarray(classes)

    def fit(self, D: np.ndarray, target: np.ndarray) -> TemperatureCalibrator:
        from scipy.optimize import minimize_scalar

        Z = np.asarray(D)
        k = len(self.classes)
        col = np.searchsorted(self.classes, target)
        own = np.full(len(col), (len(col) + 1.0) / (len(col) + 2.0))
        Q = np.repeat(((1.0 - own) / (k - 1))[:, None], k, axis=1)
        Q[np.arange(len(col)), col] = own

        def cross_entropy(log_t: float) -> float:
            P = _softmax(Z / np.exp(log_t))
            return -np.mean(np.sum(Q * np.log(np.clip(P, 1e-300, None)), axis=1))

        best = minimize_scalar(cross_entropy, bounds=(np.log(1e-3), np.log(1e3)), method="bounded")
        self.temperature_ = float(np.exp(best.x))
        return self

    def predict_proba(self, D: np.ndarray) -> np.ndarray:
        return _softmax(np.asarray(D) / self.temperature_)


def _sample_induced(train: np.ndarray, y: np.ndarray, weight: np.ndarray, size: int,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``train``'s given labels and ``size`` of its induced ones drawn uniformly, with the
    sample weights of the drawn ones multiplied by (induced count / size) so their hinge losses
    estimate the full sum of eq. (7) (module docstring, cross-fitting sample); ``train`` and
    ``weight`` unchanged when it holds no more than ``size`` induced labels."""
    given = y[train] >= 0
    pool = train[~given]
    if len(pool) <= size:
        return train, weight
    drawn = rng.choice(pool, size, replace=False)
    weight = weight.copy()
    weight[drawn] *= len(pool) / size
    return np.sort(np.concatenate([train[given], drawn])), weight


def _features(problem: LabelProblem) -> np.ndarray:
    """``problem.X``, or the error saying this solver needs it."""
    if problem.X is None:
        raise ValueError("max-margin graph cuts need node features: build the LabelProblem with X")
    return problem.X


class MaxMarginGraphCut(BaseEstimator):
    """Max-margin graph cut (Kveton et al. 2010, eq. 7): an SVM on harmonic-induced labels.

    Parameters
    ----------
    gamma_g : float, default 1.0
        Laplacian regulariser γ_g ≥ 0 of eq. (5)-(6) (the sink strength); larger values keep
        fewer, closer-to-labeled points; ∞ is the supervised SVM.
    epsilon : float, default 1e-6
        Confidence threshold ε of eq. (7) (the paper's value in Sec. 6.2).
    kernel : {"linear", "cubic", "rbf"}, default "rbf"
    C : float, default 1.0
        libsvm's C = 1/(2γ) for the paper's RKHS weight γ.
    bandwidth : float, optional
        Kernel width s (RBF exp(−‖x−z‖²/2s²), cubic (⟨x,z⟩/s² + 1)³); default
        ``paper_bandwidth(X)`` of the fitted X.
    cv : int, default 5
        Folds of given labels for the cross-fitted calibration and noise flags; 0 skips
        both (no flags, uncalibrated confidence). Reduced to the smallest class count.
    cv_sample : int ≥ 1 or None, default ``CV_SAMPLE`` (2,000)
        Induced labels of unlabelled nodes that each fold's SVM trains on at most: a uniform
        sample, each weighted (induced count / ``cv_sample``), beside every given label of
        the other folds; None: all of them. The final model always trains on all (module
        docstring, Cross-fitting sample).
    noise_threshold : float in (0, 1] or None, default None
        ``noise="graph_and_svm"``: a given label is flagged when its ``noise_score`` (the
        smaller of the cross-fitted SVM's and the graph step's leave-one-out margins)
        reaches this; None is 0.3. ``noise="svm"``: when the cross-fitted model gives
        another class at least this probability and the final model, trained with the
        label, does not fit it; None is 0.5.
    drop_noisy : bool, default False
        Refit the final model with the flagged labels hidden. Off by default: on digits the
        wrongly flagged labels are the only ones covering unusual handwriting, and hiding
        them cost more test error than the flipped labels did (see the module docstring).
    solver : {"auto", "direct", "amg"}, default "auto"
    direct_max_nodes : int, default ``DIRECT_MAX_NODES`` (1,000)
    cache_size : float, default 500
        libsvm kernel cache in MB.
    random_state : int, default 0
        Seeds the folds.
    noise : {"graph_and_svm", "svm"}, default "graph_and_svm"
        The noise rule (module docstring, noise flags).
    time_limit : "auto", float > 0, None or "none", default "auto"
        Seconds ``fit`` may take (``SolverTimeLimit`` when spent). An SVM fit cannot be
        interrupted, so each one is checked before it starts against the time spent plus
        the previous fit's seconds (solvers/_budget.py, decision 4), and so are the
        decision values on the problem's nodes that ``maxmargin`` computes after ``fit``
        (projected from ``PREDICT_PROBE`` nodes). "auto": 10× an estimate of the harmonic
        solve of the graph, at least 30 s; None or "none": no limit.

    Attributes
    ----------
    svm_ : sklearn.svm.SVC
    calibrator_ : TemperatureCalibrator or None
    classes_ : array of int, the classes the SVM was trained on
    n_classes_ : int
    bandwidth_ : float
    induced_labels_ : array (n,), induced class of each graph node, -1 when not used
    margin_ : array (n,), |ℓ| (binary) or top-two gap (multi-class) of each graph node
    noisy_ : array of bool (n,), flagged given labels
    noise_score_ : array (n_l,) or None, each given label's noise score (module docstring)
    oof_proba_ : array (n_l, n_classes_) or None, cross-fitted probabilities of the given labels
    timings_ : dict, seconds of the harmonic step and the SVM fit of the final model
    time_limit_seconds_ : float or None, the seconds ``fit`` was allowed

    References
    ----------
    Kveton, B., Valko, M., Rahimi, A., Huang, L. (2010). Semi-supervised learning with
    max-margin graph cuts. AISTATS.
    """

    def __init__(
        self,
        gamma_g: float = 1.0,
        epsilon: float = 1e-6,
        kernel: str = "rbf",
        C: float = 1.0,
        bandwidth: float | None = None,
        cv: int = 5,
        cv_sample: int | None = CV_SAMPLE,
        noise_threshold: float | None = None,
        drop_noisy: bool = False,
        solver: str = "auto",
        direct_max_nodes: int = DIRECT_MAX_NODES,
        cache_size: float = 500.0,
        random_state: int = 0,
        noise: str = "graph_and_svm",
        time_limit: float | str | None = "auto",
    ):
        self.gamma_g = gamma_g
        self.epsilon = epsilon
        self.kernel = kernel
        self.C = C
        self.bandwidth = bandwidth
        self.cv = cv
        self.cv_sample = cv_sample
        self.noise_threshold = noise_threshold
        self.drop_noisy = drop_noisy
        self.solver = solver
        self.direct_max_nodes = direct_max_nodes
        self.cache_size = cache_size
        self.random_state = random_state
        self.noise = noise
        self.time_limit = time_limit

    def _validate(self, problem: LabelProblem) -> None:
        if not isinstance(problem, LabelProblem):
            raise TypeError(f"fit takes a LabelProblem, got {type(problem).__name__}")
        if not np.all(np.isfinite(_features(problem))):
            raise ValueError("X has NaN or infinite features")
        validate_params(self.get_params(), PARAMETER_CONSTRAINTS)
        if len(set(problem.y[problem.labeled].tolist())) < 2:
            raise ValueError("need given labels of at least two classes")

    def _svc(self, width: float) -> SVC:
        kernels: dict[str, dict[str, Any]] = {  # the SVC's kernel arguments for each of the paper's kernels
            "linear": {"kernel": "linear"},
            "cubic": {"kernel": "poly", "degree": 3, "gamma": 1.0 / width**2, "coef0": 1.0},
            "rbf": {"kernel": "rbf", "gamma": 1.0 / (2.0 * width**2)},
        }
        return SVC(C=self.C, cache_size=self.cache_size, decision_function_shape="ovo", **kernels[self.kernel])

    def _fit_two_steps(self, problem: LabelProblem, y: np.ndarray, width: float, budget: Budget = UNLIMITED,
                       expected: float | None = None, sample: np.random.Generator | None = None):
        """Eq. (6) then eq. (7) for given labels ``y``; returns the SVC, induced labels, margins.
        ``budget`` is checked before the SVM fit against ``expected`` more seconds (None: the
        first fit, projected from a probe fit when the budget has a limit; ``SVM_PROBE``).
        ``sample`` (a cross-fitting fold's): the SVM trains on every given label and at most
        ``cv_sample`` induced ones drawn with it (``_sample_induced``)."""
        clock = Stopwatch()
        with clock("harmonic_seconds"):
            induced, margin = induce_labels(
                problem.W, y, problem.n_classes, gamma_g=self.gamma_g, epsilon=self.epsilon,
                label_confidence=problem.label_confidence, solver=self.solver,
                direct_max_nodes=self.direct_max_nodes)
        train = np.flatnonzero(induced >= 0)
        weight = np.ones(len(y))
        if problem.label_confidence is not None:
            weight = np.where(y >= 0, problem.label_confidence, 1.0)
        if len(np.unique(induced[train])) < 2:
            raise ValueError("the induced labels hold fewer than two classes; lower epsilon or gamma_g")
        if sample is not None and self.cv_sample is not None:
            train, weight = _sample_induced(train, y, weight, int(self.cv_sample), sample)
        if expected is None:
            expected = self._probe_seconds(problem, induced, train, weight, width) if budget.limit is not None else 0.0
        budget.check_next("an SVM fit", expected)
        with clock("svm_seconds"):
            svm = self._svc(width).fit(_features(problem)[train], induced[train], sample_weight=weight[train])
        timings = clock.seconds
        return svm, induced, margin, timings

    def _probe_seconds(self, problem: LabelProblem, induced: np.ndarray, train: np.ndarray, weight: np.ndarray,
                       width: float) -> float:
        """Expected seconds of the SVM fit on ``train`` from a fit on ``SVM_PROBE`` of its points
        (0 when it is small, or the sample holds one class)."""
        if len(train) <= 2 * SVM_PROBE:
            return 0.0
        sample = np.sort(np.random.default_rng(self.random_state).choice(train, SVM_PROBE, replace=False))
        if len(np.unique(induced[sample])) < 2:
            return 0.0
        start = time.perf_counter()
        self._svc(width).fit(_features(problem)[sample], induced[sample], sample_weight=weight[sample])
        return (time.perf_counter() - start) * (len(train) / SVM_PROBE) ** SVM_EXPONENT

    def _proba_from(self, D: np.ndarray, svm_classes: np.ndarray, calibrator) -> np.ndarray:
        if calibrator is not None:
            P_known, cols = calibrator.predict_proba(D), calibrator.classes
        else:
            P_known, cols = _softmax(D), svm_classes
        P = np.zeros((D.shape[0], self.n_classes_))
        P[:, cols] = P_known
        return P

    def _cross_fit(self, problem: LabelProblem, width: float,
                   budget: Budget = UNLIMITED) -> tuple[np.ndarray, np.ndarray] | None:
        """Out-of-fold decision values of the given labels (each fold hidden from both steps) and
        their class columns; None when the folds cannot be drawn or their SVMs saw other classes."""
        y = problem.y
        labeled = np.flatnonzero(y >= 0)
        counts = np.bincount(y[labeled], minlength=problem.n_classes)
        n_splits = min(int(self.cv), int(counts[counts > 0].min()))
        if n_splits < 2:
            return None
        folds = StratifiedKFold(n_splits, shuffle=True, random_state=self.random_state)
        X = _features(problem)
        held_scores: list[tuple[np.ndarray, np.ndarray]] = []
        classes: np.ndarray | None = None
        last_fit: float | None = None  # the previous fold's SVM seconds: the next one's expected cost
        sampled = False  # did a fold's SVM train on a sample of its induced labels (cv_sample)?
        draws = np.random.default_rng(self.random_state)  # one stream: each fold draws its own sample
        for _, held in folds.split(labeled, y[labeled]):  # a loop over folds
            y_fold = y.copy()
            y_fold[labeled[held]] = -1
            svm, induced, _, timings = self._fit_two_steps(problem, y_fold, width, budget, last_fit, draws)
            last_fit = timings["svm_seconds"]
            sampled |= bool(svm.shape_fit_[0] < np.count_nonzero(induced >= 0))
            if classes is None:
                classes = svm.classes_
            elif not np.array_equal(classes, svm.classes_):
                return None  # a fold's SVM saw other classes: its columns differ
            held_scores.append((held, _class_scores_of(svm, X[labeled[held]])))
        if classes is None:  # no fold at all: n_splits >= 2 draws some
            return None
        D = np.zeros((len(labeled), held_scores[0][1].shape[1]))
        for held, D_held in held_scores:
            D[held] = D_held
        # a sampled fold's seconds say nothing of the final fit on every induced label: that one
        # is projected from a probe instead (None)
        self.timings_ = {"fold_svm_seconds": None if sampled else last_fit}
        return D, classes

    def fit(self, problem: LabelProblem) -> MaxMarginGraphCut:
        """Induce labels on the graph, fit the SVM, and (``cv`` ≥ 2) calibrate and flag noise.

        Parameters
        ----------
        problem : LabelProblem
            Needs ``X`` (node features).

        Returns
        -------
        self

        Raises
        ------
        SolverOutOfMemory
            Before anything is solved, when ``PEAK_BLOCKS`` blocks of n × C float32, the
            graph's and the features' copies and libsvm's kernel cache exceed the memory the
            process may take (``solvers/_memory.py``).
        """
        self._validate(problem)
        n, X = problem.n_nodes, _features(problem)
        # libsvm fills its cache with float32 kernel columns of one class pair's points at a
        # time (one-vs-one): the pair's share of the nodes is taken as the two largest
        # classes' share of the given labels, the induced labels being unknown at the door
        given = np.sort(np.bincount(problem.y[problem.labeled], minlength=2))[-2:].sum()
        pair = n * given / max(1, np.count_nonzero(problem.labeled))
        cache = int(min(self.cache_size * 2**20, 4 * pair * pair))
        check_blocks("maxmargin", n, problem.n_classes, PEAK_BLOCKS, problem.W.nnz, GRAPH_COPIES, "a score",
                     FEATURE_COPIES * 8 * X.size + cache,
                     f"{FEATURE_COPIES} copies of the features and libsvm's kernel cache of {cache / 2**20:.3g} MiB")
        budget = Budget("maxmargin", self.time_limit, problem.W, problem.n_classes)
        self.time_limit_seconds_ = budget.limit
        y = problem.y
        self.n_classes_ = int(problem.n_classes)
        width = float(self.bandwidth) if self.bandwidth is not None else paper_bandwidth(_features(problem))
        self.bandwidth_ = width
        labeled = np.flatnonzero(y >= 0)
        self.noisy_ = np.zeros(len(y), dtype=bool)
        self.calibrator_ = None
        self.oof_proba_ = None
        self.noise_score_ = None
        threshold = DEFAULT_THRESHOLDS[self.noise] if self.noise_threshold is None else self.noise_threshold
        self.timings_ = {"fold_svm_seconds": None}
        cross = None if self.cv == 0 else self._cross_fit(problem, width, budget)
        doubted = np.zeros(len(labeled), dtype=bool)
        if cross is not None:
            D_oof, oof_classes = cross
            lone = problem.lone_labels[labeled]  # the only label of its class: nothing judges it
            # Doubt with a calibrator fit on every given label, then refit it on the trusted ones.
            first = self._fit_calibrator(D_oof, y[labeled], oof_classes)
            P_oof = self._proba_from(D_oof, oof_classes, first)
            if self.noise == "svm":
                other = P_oof.copy()
                other[np.arange(len(labeled)), y[labeled]] = -np.inf
                doubted = (other.max(axis=1) >= threshold) & ~lone
            else:  # both the cross-fitted SVM and the graph step's leave-one-out doubt it
                graph = harmonic_loo_margin(problem.W, y, problem.n_classes, problem.label_confidence)[labeled]
                self.noise_score_ = np.fmin(margin_scores(P_oof, y[labeled]), graph)
                doubted = (self.noise_score_ >= threshold) & ~lone
                self.noisy_[labeled[doubted]] = True
            calibrator = self._fit_calibrator(D_oof[~doubted], y[labeled][~doubted], oof_classes)
            self.calibrator_ = calibrator if calibrator is not None else first
            self.oof_proba_ = self._proba_from(D_oof, oof_classes, self.calibrator_)
            if self.noise == "svm":
                self.noise_score_ = margin_scores(self.oof_proba_, y[labeled])
        self.svm_, self.induced_labels_, self.margin_, self.timings_ = self._fit_two_steps(
            problem, y, width, budget, self.timings_["fold_svm_seconds"])
        if self.noise == "svm" and doubted.any():
            # flagged: doubted by the models that never saw the label, and a training error of
            # the one that did (module docstring, noise flags)
            unfit = self.svm_.predict(_features(problem)[labeled[doubted]]) != y[labeled[doubted]]
            self.noisy_[labeled[doubted][unfit]] = True
        if self.drop_noisy and self.noisy_.any():
            y_final = y.copy()
            y_final[self.noisy_] = -1
            if len(set(y_final[y_final >= 0].tolist())) >= 2:
                self.svm_, self.induced_labels_, self.margin_, self.timings_ = self._fit_two_steps(
                    problem, y_final, width, budget, self.timings_["svm_seconds"])
        self.classes_ = self.svm_.classes_
        if self.calibrator_ is not None and cross is not None and not np.array_equal(cross[1], self.classes_):
            self.calibrator_ = None  # the final SVM's decision columns differ from the folds'
        if budget.limit is not None:
            budget.check_next(f"the SVM's decision values on the graph's {problem.n_nodes:,} nodes",
                              self._decision_seconds(_features(problem)))
        return self

    def _decision_seconds(self, X: np.ndarray) -> float:
        """Expected seconds of the fitted SVM's decision values on the rows of X, from those of
        its first ``PREDICT_PROBE`` rows on one thread (0 when X is small), shared by the threads
        of ``_decision_blocks``."""
        if len(X) <= 2 * PREDICT_PROBE:
            return 0.0
        start = time.perf_counter()
        self.svm_.decision_function(X[:PREDICT_PROBE])
        return (time.perf_counter() - start) * len(X) / PREDICT_PROBE / product_threads()

    @staticmethod
    def _fit_calibrator(D: np.ndarray, target: np.ndarray, classes: np.ndarray):
        """Temperature on the cross-fitted decision values; None without two classes to fit."""
        if len(np.unique(target)) < 2 or not np.isin(target, classes).all():
            return None
        return TemperatureCalibrator(classes).fit(D, target)

    def _check_fitted(self, X) -> np.ndarray:
        if not hasattr(self, "svm_"):
            raise ValueError("this MaxMarginGraphCut is not fitted yet; call fit(problem) first")
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.svm_.shape_fit_[1]:
            raise ValueError(f"X must have shape (m, {self.svm_.shape_fit_[1]}), got {X.shape}")
        return X

    def decision_function(self, X) -> np.ndarray:
        """Binary: the SVM's f(x), shape (m,), positive for ``classes_[1]`` (eq. 8 plus bias).
        Multi-class: per-class scores (m, len(classes_)), each class's mean signed pairwise
        (one-vs-one) decision value."""
        X = self._check_fitted(X)
        S = _class_scores_of(self.svm_, X)
        return S[:, 1] if len(self.classes_) == 2 else S

    def predict(self, X) -> np.ndarray:
        """The SVM's class for each row of X: sgn f(x) in the binary case (eq. 8), else
        libsvm's one-vs-one vote (it beat the arg-max of the per-class scores on digits)."""
        X = self._check_fitted(X)
        return self.svm_.predict(X).astype(np.int64)

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities (m, n_classes_): calibrated when ``cv`` allowed it, else a softmax."""
        return self.predict_with_proba(X)[1]

    def predict_with_proba(self, X) -> tuple[np.ndarray, np.ndarray]:
        """``predict(X)`` and ``predict_proba(X)`` from one evaluation of the kernel against the
        support vectors (each alone evaluates it; on n nodes that is most of a fit's cost), a
        block of rows at a time (``DECISION_BLOCK_BYTES``)."""
        X = self._check_fitted(X)
        labels = np.empty(len(X), dtype=np.int64)
        P = np.empty((len(X), self.n_classes_))
        for rows, D in _decision_blocks(self.svm_, X):
            labels[rows] = _vote(self.svm_, D)
            P[rows] = self._proba_from(_class_scores(self.svm_, D), self.classes_, self.calibrator_)
        return labels, P


def maxmargin(
    problem: LabelProblem,
    *,
    gamma_g: float = 1.0,
    epsilon: float = 1e-6,
    kernel: str = "rbf",
    C: float = 1.0,
    bandwidth: float | None = None,
    cv: int = 5,
    cv_sample: int | None = CV_SAMPLE,
    noise_threshold: float | None = None,
    drop_noisy: bool = False,
    predict_unreachable: bool = True,
    solver: str = "auto",
    direct_max_nodes: int = DIRECT_MAX_NODES,
    random_state: int = 0,
    noise: str = "graph_and_svm",
    time_limit: float | str | None = "auto",
) -> Prediction:
    """Label every node with a max-margin graph cut fitted on the problem (Kveton et al. 2010).

    Parameters
    ----------
    problem : LabelProblem
        Needs ``X``.
    gamma_g, epsilon, kernel, C, bandwidth, cv, cv_sample, noise_threshold, drop_noisy,
    solver, direct_max_nodes, random_state, noise, time_limit
        See ``MaxMarginGraphCut``.
    predict_unreachable : bool, default True
        Give nodes no label can reach the model's prediction (they are model predictions,
        not graph ones); False gives them -1 and confidence 0 like the graph solvers.

    Returns
    -------
    Prediction
        ``labels`` the SVM's predictions, ``confidence`` the probability of that label,
        ``scores`` the n × C probabilities, ``noisy`` the flagged given labels (their nodes
        predicted by the cross-fitted model, module docstring, Labels);
        ``info["model"]`` the fitted ``MaxMarginGraphCut`` (for new feature vectors),
        ``info["graph_unreachable"]`` the nodes no label reaches, ``info["n_train"]`` the
        SVM's training-set size, ``info["calibrated"]`` and the two steps' timings.
    """
    check_choice("predict_unreachable", predict_unreachable, (True, False))
    model = MaxMarginGraphCut(
        gamma_g=gamma_g, epsilon=epsilon, kernel=kernel, C=C, bandwidth=bandwidth, cv=cv, cv_sample=cv_sample,
        noise_threshold=noise_threshold, drop_noisy=drop_noisy, solver=solver,
        direct_max_nodes=direct_max_nodes, random_state=random_state, noise=noise, time_limit=time_limit)
    model.fit(problem)
    labels, P = model.predict_with_proba(problem.X)
    confidence = np.clip(P[np.arange(len(labels)), labels], 0.0, 1.0)
    if model.oof_proba_ is not None and model.noisy_.any():  # flags come from the cross-fitted model
        # a flagged label's node is predicted as the cross-fitted model, one that never saw the
        # label, predicts it (module docstring, Labels), not as the final SVM fitted to it
        predict_flagged(labels, confidence, model.noisy_, problem.labeled, model.oof_proba_)
    cut_off = unreachable(problem.W, problem.labeled & ~model.noisy_ if model.drop_noisy else problem.labeled)
    if not predict_unreachable:
        labels[cut_off] = -1
        confidence[cut_off] = 0.0
    noise_score = None
    if model.noise_score_ is not None:
        noise_score = per_label(problem.n_nodes, problem.labeled, model.noise_score_)
    degenerate = one_class_takes_all(labels, problem.y, problem.n_classes)
    if degenerate:
        induced = np.bincount(model.induced_labels_[model.induced_labels_ >= 0], minlength=problem.n_classes)
        warn_degenerate("maxmargin", degenerate, (
            f"The SVM learns from the labels the harmonic step induces (eq. 6-7; per class {induced.tolist()}), "
            "and predicts one class almost everywhere: the graph or the features do not separate the classes "
            "for it. Check them, or use another solver."))
    info = {
        "model": model,
        "degenerate": degenerate,
        "graph_unreachable": cut_off,
        "n_train": int(np.sum(model.induced_labels_ >= 0)),
        "calibrated": model.calibrator_ is not None,
        "temperature": model.calibrator_.temperature_ if model.calibrator_ is not None else 1.0,
        "bandwidth": model.bandwidth_,
        "time_limit_seconds": model.time_limit_seconds_,
        **model.timings_,
    }
    params = dict(model.get_params(), predict_unreachable=predict_unreachable)
    del params["time_limit"]  # how long it may run, not how it labels (info holds the seconds)
    return Prediction(labels, confidence, model.noisy_.copy(), P, "maxmargin", params, info, noise_score)
