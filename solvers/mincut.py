"""Graph mincut labelling (Blum & Chawla, ICML 2001), one-vs-rest for several classes.

Each binary problem is the paper's §2 construction: a source ``v+`` tied to the
positive given labels and a sink ``v-`` tied to the negative ones by arcs no cut can
afford, the example-example edges as undirected capacities, and an exact s-t minimum
cut computed by Boykov-Kolmogorov max-flow (PyMaxflow, compiled C++). Among several
minimum cuts the paper's §2 step 4 takes the one with the smallest ``V+``: the nodes
reachable from ``v+`` in the residual graph.

Open decisions (from ``notes/mincut-notes.md`` §7 and met while implementing) and the
choice made here:

1. Infinite seed arcs: a finite capacity ``1 + 2·Σ w`` (larger than any cut that
   avoids seed arcs), as the notes suggest; doubles, so cut values are exact up to
   floating-point rounding (ties between cuts whose values differ only by rounding are
   not detected).
2. Smallest-``V+`` tie rule: BK's search trees at termination are exactly the nodes
   reachable from the source / reaching the sink in the residual graph, and PyMaxflow
   reports a free node (in neither tree) as on the source side. So the cut is solved
   with the roles swapped (library source = ``v-``, library sink = ``v+``): ``V+`` is
   then the library's sink tree, which is the residual reach of ``v+``. Checked against
   brute-force enumeration in ``tests/test_mincut.py``. networkx is not used (its
   ``minimum_cut`` returns the largest source side).
3. α (§2, §5.1 / Fig 1): scales edges whose two ends are both unlabelled; default 1
   (plain mincut). Labeled-labeled and labeled-unlabeled edges keep their weight.
4. Multi-class (not in the paper, §1.7 of the notes): one-vs-rest cuts, class ``c``
   against all other given labels. These are the *isolating cuts* of multiway cut
   (Dahlhaus et al., 1994). With the smallest-source-side rule on an undirected graph
   the source sides of different classes are disjoint (posimodularity of the cut
   function), so no node is claimed by two classes in exact arithmetic; should
   rounding make it happen, the claiming class with the cheapest cut wins. A node
   claimed by no class goes to the class whose isolating cut is the most expensive
   (ties: lowest class index) — the isolation heuristic, whose labelling is a
   (2 - 2/C)-approximate minimum multiway cut. For two classes this is exactly the
   paper's binary algorithm with class 1 as ``+`` (``V+`` = smallest source side,
   everything else ``-``). The isolation rule dumps every unclaimed node into one
   class, which can be far from them; so by default (``multiclass="expansion"``) the
   isolation labelling is then improved by α-expansion moves (Boykov, Veksler & Zabih,
   2001) on the same Potts / multiway-cut energy (the multi-class objective of
   Kleinberg & Tardos that the paper names in §1), given labels fixed, one exact cut
   per move, a move kept only if it lowers the cost strictly, until a sweep over the
   classes changes nothing (or ``max_sweeps``). The result is never costlier than the
   isolation labelling and, once converged, within a factor 2 of the optimum (BVZ
   Thm 6.1 for the Potts model); with two classes the
   isolation labelling is already optimal, so the paper's binary answer is unchanged.
   ``multiclass="isolation"`` stops after the isolating cuts.
   The moves are restricted (``expansion_hops``, default 0): in each sweep only the
   isolation step's unclaimed nodes and the nodes on an edge whose ends disagree may
   switch; an edge to a node that cannot move becomes a unary term, so each move is
   still an exact cut of a smaller graph and never raises the cost. Measured on the
   100k-node 10-NN graph of ``bench/solver_scale.py`` (1% labelled, α = 0.1): the full
   moves took 41.7 of the 46.4 s (30 moves), restricted they leave 16% of the nodes
   movable and reach the same cost (1042.91 from 1110.99 after isolation) and the same
   labels in 7.9 s in all; 1 hop makes 84% movable, 2 hops every node (a 10-NN graph
   in 32-d is a small world). A region the isolation rule mislabels whole is made of
   unclaimed nodes, which stay movable. ``expansion_hops=None`` is the full move.
5. Components with no given label: by default the contract wins over the paper's tie
   rule ("negative"): label -1, confidence 0 (``unreached="none"``). On the δ₀ and δ½
   graphs that leaves many nodes unlabelled (about a quarter on 50 labelled Pima-like
   points with δ½), so ``unreached="paper"`` keeps the cut's own answer (the paper's tie
   rule) and ``"nearest"`` takes the nearest given label's class in feature space;
   ``bench/mincut.py`` compares the three on the paper's Table 1 data.
6. ``label_confidence`` is ignored by the cuts: the paper's seed arcs are infinite for
   every given label (a finite, confidence-scaled seed arc would be a different energy).
   The default noise rule's harmonic leave-one-out (decision 8) does use it, as the
   harmonic solver does: a label of trust c is clamped to c there.
7. Confidence (not in the paper): the probability the harmonic relaxation of the same
   energy on the same (α-scaled) graph gives the cut's class (``solvers._relaxation``:
   Zhu, Ghahramani & Lafferty 2003, Sec. 2, with the harmonic solver's defaults: its class
   mass normalisation, and its temperature fitted on the given labels' leave-one-out,
   ``solvers._calibration``). ``scores`` are those probabilities, so where the relaxation
   prefers another class the cut's label reads a low confidence and the runner-up is
   the class it prefers. The labels stay the exact cut's (the 2001 algorithm).
   Why not the randomized min cuts of Blum, Lafferty, Rwebangira & Reddy (ICML 2004),
   the confidence until then (the share of ``n_cuts`` perturbed runs agreeing with the
   cut): where the labelling is degenerate (decision 10) the perturbed cuts agree as
   robustly as the exact one, so a wrong label read 1.0. ``python -m bench calibration
   --solver mincut`` (six real sets, 5% and 10% labelled, 10 draws, the unlabelled
   nodes): ECE 0.244 → 0.075, wrong predictions at confidence ≥ 0.99 0.626 → 0.052,
   AUROC of confidence for right against wrong 0.636 → 0.920 (``bench/results/
   calibration_mincut.md``). The smaller of the two confidences, measured ad hoc on the
   same cells with 5 draws, was no better than the relaxation alone (ECE 0.078 against
   0.076, wrong at ≥ 0.99 0.049 against 0.052, AUROC 0.921 against 0.923), so the
   simpler is kept. Cost: one harmonic solve, which the default noise rule reads anyway.
   The randomized cuts remain the cavity noise rules' vote (decision 8): ``n_cuts``
   times every edge weight is multiplied by an independent log-normal factor
   ``exp(perturbation · z)``, ``z ~ N(0, 1)`` (the 2004 paper adds random noise to the
   weights; its exact noise law is not in the seeds, this one is an implementer choice
   that keeps weights positive and symmetric), and the whole multi-class procedure
   (isolating cuts, then expansion) is rerun; the 2004 paper's discarding of unbalanced
   cuts is not done. They run only for those rules.
8. Noise flags (not in the paper: infinite seed arcs never let a given label lose).
   Four rules (``noise=``), each giving a ``noise_score`` per label:
   - ``"cavity_harmonic"`` (default): the smaller of the ``"cavity"`` score below and the
     leave-one-out margin of the harmonic function on the same (α-scaled) graph
     (``solvers._relaxation``: Zhu et al. 2003's relaxation of this cut's energy, its
     leave-one-out estimated without a solve per label), so a label is flagged only when
     both its neighbours' vote over the cuts and the relaxation doubt it; threshold 0.3.
     Cost: none on top of the cuts and the relaxation of decision 7. Measured reasons below.
   - ``"cavity"``: the label's own node is relabelled by Lemma 3.4's rule for
     an unlabelled node, the weighted vote of its neighbours (the leave-one-out that moves
     only that node). The neighbours vote with their class distribution over the
     randomized cuts of decision 7 (Blum et al. 2004), or with the exact
     labelling when ``n_cuts=0``. Score: the best other class's share of the node's edge
     weight minus the given class's. Cost: one sparse product.
     Why the randomized cuts vote: a clean label that the exact cut isolates (the cut
     gives its whole neighbourhood to another class, §3.1's failure with few labels)
     scores 1 on the exact labelling like a flipped one; over perturbed cuts its
     neighbourhood is not always lost. On digits (10 per class, 10% flipped,
     development draws seeds 0-9, not the benchmark's 100-104) at the old threshold 0.35:
     precision / recall 0.71 / 0.99 with the exact labelling, 0.85 / 0.99 with the
     randomized cuts' distribution; clean labels flagged: digits 4.4% → 2.0%, segment
     12.0% → 10.7%, WDBC 4.1% → 4.6%.
     ``noise_threshold`` = 0.95, by a stated rule, not fitted to flipped labels: the
     smallest multiple of 0.05 at which the share of *clean* labels flagged is at most
     the issue's 5% on every development set (digits, segment, 10 per class; WDBC, 28
     per class; seeds 0-9; nothing flipped): segment needs 0.95 (5.3% at 0.90, 4.0% at
     0.95; digits 0.4%, WDBC 0.5%). On the development digits with 10% flipped it gives
     precision / recall 0.95 / 0.75 (0.94 / 0.84 at 0.90): a flag needs nearly all of
     the node's neighbourhood, in nearly every perturbed cut, on one other class.
   - ``"loo"``: the ``c``-vs-rest cut recomputed without the label (``i`` unlabelled,
     every other label kept); flagged when *no* minimum cut puts ``i`` on ``c``'s side
     (``i`` outside the largest source side, so a tie keeps the label: the benefit of
     the doubt, where Lemma 3.4 sends a tie to ``-``). Score: (w_out − w_in) / d_i of
     ``i`` against that cut, positive exactly when flagged. One cut per given label.
   - ``"grouped"``: the same cuts with a whole colour class of labels left out at once,
     labels within 2 hops of each other never in the same class (``colour_labels``):
     one cut per class present in a colour class, exact when every label is within 2
     hops of the others, and on digits (20 per class, 10% flipped) within 2% of the
     labels of ``"loo"``.
   Why the cavity and the harmonic leave-one-out together (issue 15 §1; development draws
   seeds 0-4, not the benchmark's 100-104; digits and WDBC at 10% and 20% flipped, digits,
   segment and WDBC with nothing flipped; ``python -m bench noise_flags --skip-cost
   --methods mincut --seeds 0-4 --ranking``, labels of the five seeds pooled). The
   cavity's score ranks well on digits (average precision 0.89 at 10% flipped, 0.97 at 20%)
   but its top is crowded with clean labels the cuts isolate (score 1 for every
   perturbed cut): no threshold reaches precision 0.95 on digits at 10%, and at its 0.95
   it finds 0.72 of the flips at precision 0.90; it cannot go lower, since segment's clean
   labels are flagged at 5.4% from 0.90 down. Tried and dropped: the neighbours' vote
   with the label's own pull removed from each neighbour (a 2-hop cavity: average
   precision 0.94 on digits at 10% but 0.81 on WDBC, and segment's clean labels still 5.1%
   at 0.90), and the vote of the cuts with the label left out (a colour class of far-apart
   labels left out per cut, as ``"grouped"``: with its seed gone the cut gives a clean
   label's neighbourhood away, §3.1's failure, and 15-27% of segment's clean labels were
   flagged at 0.95). The harmonic leave-one-out alone ranks better at the top (recall
   0.86 at precision 0.95 on digits) but weaker on WDBC at 20% (average precision 0.83).
   The smaller of the two keeps each one's precision: average precision 0.95 / 0.98 on
   digits at 10% / 20%, 0.89 / 0.86 on WDBC, recall 0.92 at precision 0.95 on digits at
   10%. Threshold by a stated rule: among multiples of 0.05, the one with the best mean F1
   over the four flipped development sets among those that flag at most 5% of the clean
   labels of every clean development set: 0.3 (segment 4.3%, digits 0.2%, WDBC 1.4%;
   0.25 flags 5.4% of segment's); at 0.3 digits' 10% flips are found at precision /
   recall 0.98 / 0.84, WDBC's 20% at 0.89 / 0.58. On the benchmark's seeds 100-104
   (``bench/results/noise_flags_digits_segment_wdbc_cleanlab_maxmargin_mincut.md``):
   digits 10% 0.98 / 0.86 (the cavity alone 1.00 / 0.72), WDBC 20% F1 0.83 (0.72;
   cleanlab 0.72), segment's clean labels 1.7% flagged (5.4%). Cost, timed inside one
   call on the 100k-node graph of ``bench/noise_flags.py`` (1,000 labels, α = 0.1,
   ``n_cuts=0``): 1.8-2.1 s of flags against 12.3-14.9 s of cuts.
   Why the cavity was the default before ``"cavity_harmonic"``: on kNN graphs with few labels the cut without a label
   leaves it alone far too often. On clean labels (10 per class, seeds 0-4, α = 1,
   n_cuts = 0) the cut rules flagged 23.6% of digits' labels and 48% of segment's; the
   exact-labeling cavity at 0.35 flagged 3.8% and 14.9%, and caught digits' 10% flips at
   precision / recall 0.65 / 0.98 (cuts: 0.25 / 1.00).
   Never flagged (score -1): a label whose connected component holds no other given
   label (no evidence against it) and the only given label of its class (left out, no
   cut can give its class back to it).
   A flagged label's node is predicted as its neighbours vote without it (their classes
   in the exact cut, weighted by its edges; the class the flag doubts excluded; its share
   the confidence), as the other solvers predict a flagged node by its held-out class.
   The cut itself keeps every given label on its class (infinite seed arcs), so before
   this its prediction was the given label at confidence 1.0: ``python -m bench
   flagged_predictions --seeds 0-4`` (digits, 10 per class, 10% flipped, 10-NN) found 2
   of 45 flagged nodes right before, 40 of 45 now. A
   rule-``"loo"`` flag with no other class among its neighbours keeps its label.
9. Graph construction (Mincut-3, δ-graphs, weighted kNN) is the caller's: the solver
   takes ``W`` as given (see ``similarity/cut_graphs.py``).
10. Degenerate labellings (the paper's own failure, §3.1): with few labels on a sparse
    graph, cutting around each seed is cheaper than cutting between the classes, the
    isolating cuts claim little more than their seeds and every other node falls to one
    class (plain mincut, α = 1, at 1% labelled on ``bench/hard_data.py``'s sets: WDBC,
    ionosphere, diabetes and vote, 3-8 labels, at or below chance with one class taking
    99-100% of the nodes; means of seeds 0-2, ``n_cuts=0``). That is the algorithm's
    answer, not a defect, so the labels stay; when one class takes at least 95% of the
    unlabelled nodes a label reaches while holding less of the given labels
    (``_graph.one_class_takes_all``), the solver says so with a
    ``DegenerateLabelingWarning`` naming §3.1 and the remedy, α < 1, and
    ``info["degenerate"]`` holds the shares. α = 0.1 put the same runs at 0.84 (WDBC,
    chance 0.63), 0.83 (ionosphere, 0.64) and 0.72 (vote, 0.61); diabetes stayed at 0.55
    (chance 0.65) with 98% in one class, where every peer is below chance too. The
    default α stays the paper's 1.
"""

from __future__ import annotations

import maxflow
import numpy as np
import scipy.sparse as sp

from ._budget import UNLIMITED, Budget
from ._graph import (
    finished,
    graph_components,
    margin_scores,
    one_class_takes_all,
    one_hot,
    per_label,
    unreachable,
    warn_degenerate,
)
from ._memory import check_blocks
from ._relaxation import class_probabilities, harmonic_relaxation
from ._timing import Stopwatch
from ._validation import TIME_LIMIT, Integral, Interval, Options, Real, validate_params
from .problem import LabelProblem, Prediction

NOISE_RULES = ("cavity", "grouped", "loo", "none", "cavity_harmonic")
# the rules that read the randomized cuts' vote (decision 8)
CAVITY_RULES = ("cavity", "cavity_harmonic")
# noise_threshold=None takes the rule's own (module docstring, decision 8)
DEFAULT_THRESHOLDS = {"cavity": 0.95, "cavity_harmonic": 0.3}
#: n × C float32 blocks at the call's peak: the harmonic relaxation's (solvers/_relaxation.py),
#: beside which the cuts hold the randomized votes and the relaxation's probabilities in
#: doubles: 7.3 measured with tracemalloc at 10,000 nodes of 100 classes and 7.4 at 20,000 of
#: 200 (blobs, 10-NN, 5% labelled), where one-hot labellings and a copy of the votes took it
#: to 8.4 and 8.2. What ``check_blocks`` asks for at the door, before the cuts, with the
#: graph's copies (W, its scaled and perturbed copies, and the relaxation's).
PEAK_BLOCKS = 8
GRAPH_COPIES = 4
UNREACHED_RULES = ("none", "paper", "nearest")
MULTICLASS_RULES = ("expansion", "isolation")
DEGENERATE_REASON = (
    "With few given labels a cut around each label's node costs less than a cut between the classes, so the "
    "isolating cuts claim little beyond the labels and the rest falls to one class (Blum & Chawla 2001, §3.1). "
    "Scaling the edges between unlabelled nodes down lets the labels' neighbourhoods follow them: alpha=0.1 "
    "(bench/results/hard_data.md).")
PARAMETER_CONSTRAINTS = {
    "alpha": [Interval(Real, 0, None)],
    "multiclass": [Options(MULTICLASS_RULES)],
    "max_sweeps": [Interval(Integral, 1, None)],
    "expansion_hops": [None, Interval(Integral, 0, None)],
    "n_cuts": [Interval(Integral, 0, None)],
    "perturbation": [Interval(Real, 0, None, closed="neither")],
    "noise": [Options(NOISE_RULES)],
    "noise_threshold": [None, Interval(Real, 0, 1, closed="right")],
    "unreached": [Options(UNREACHED_RULES)],
    "time_limit": TIME_LIMIT,
}


def _upper_edges(W: sp.spmatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each undirected edge once (i < j) with its weight."""
    U = sp.triu(W, k=1).tocoo()
    keep = U.data > 0
    return U.row[keep].astype(np.int64), U.col[keep].astype(np.int64), U.data[keep].astype(np.float64)


def binary_min_cut(
    W: sp.spmatrix, positive: np.ndarray, negative: np.ndarray, *, smallest: bool = True
) -> tuple[np.ndarray, float]:
    """Exact minimum (v+, v-) cut of Blum & Chawla (2001) §2, steps 1-4.

    Parameters
    ----------
    W : scipy.sparse matrix, shape (n, n)
        Symmetric non-negative edge weights (only the upper triangle is read).
    positive, negative : array of bool, shape (n,)
        Nodes tied to ``v+`` (resp. ``v-``) by an arc no cut can afford; disjoint.
    smallest : bool, default True
        Return the smallest source side ``V+`` (the paper's rule: nodes reachable from
        ``v+`` in the residual graph). ``False`` returns the largest one (every node
        that cannot reach ``v-`` in the residual graph).

    Returns
    -------
    source_side : array of bool, shape (n,)
        ``V+`` minus ``v+``.
    value : float
        The cut value (the maximum flow).

    References
    ----------
    Blum & Chawla (2001), §2; Boykov & Kolmogorov (2004), "An experimental comparison of
    min-cut/max-flow algorithms for energy minimization in vision", IEEE TPAMI.
    """
    positive = np.asarray(positive, dtype=bool)
    negative = np.asarray(negative, dtype=bool)
    if np.any(positive & negative):
        raise ValueError("a node cannot be tied to both v+ and v-")
    n = W.shape[0]
    rows, cols, w = _upper_edges(W)
    infinite = 1.0 + 2.0 * float(w.sum())
    g = maxflow.Graph[float](n, len(w))
    nodes = g.add_nodes(n)
    if len(w):
        g.add_edges(rows, cols, w, w)
    pos, neg = np.flatnonzero(positive), np.flatnonzero(negative)
    # Library source = v- when the smallest V+ is wanted: PyMaxflow puts free nodes on
    # the library-source side, so V+ is then exactly the library sink tree (see 2. above).
    lib_source, lib_sink = (neg, pos) if smallest else (pos, neg)
    if len(lib_source):
        g.add_grid_tedges(nodes[lib_source], infinite, 0.0)
    if len(lib_sink):
        g.add_grid_tedges(nodes[lib_sink], 0.0, infinite)
    value = float(g.maxflow())
    in_lib_sink = np.asarray(g.get_grid_segments(nodes), dtype=bool)
    source_side = in_lib_sink if smallest else ~in_lib_sink
    return source_side, value


def scale_unlabeled_edges(W: sp.spmatrix, labeled: np.ndarray, alpha: float) -> sp.csr_matrix:
    """Multiply the weight of every edge between two unlabelled nodes by ``alpha`` (§5.1, Fig 1)."""
    W = sp.csr_matrix(W)
    if alpha == 1.0:
        return W
    C = W.tocoo()
    both_unlabeled = ~labeled[C.row] & ~labeled[C.col]
    data = np.where(both_unlabeled, alpha * C.data, C.data)
    out = sp.csr_matrix((data, (C.row, C.col)), shape=W.shape)
    out.eliminate_zeros()
    return out


def _perturb(W: sp.spmatrix, perturbation: float, rng: np.random.Generator) -> sp.csr_matrix:
    """Symmetric log-normal multiplicative noise on every edge (one draw per undirected edge)."""
    rows, cols, w = _upper_edges(W)
    w = w * np.exp(perturbation * rng.standard_normal(len(w)))
    U = sp.csr_matrix((w, (rows, cols)), shape=W.shape)
    return (U + U.T).tocsr()


def _one_vs_rest(W: sp.spmatrix, y: np.ndarray, n_classes: int,
                 budget: Budget = UNLIMITED) -> tuple[np.ndarray, np.ndarray, dict]:
    """Labels from one isolating cut per class and the isolation rule (decision 4)."""
    n = W.shape[0]
    claims = np.zeros((n, n_classes), dtype=bool)
    values = np.full(n_classes, -np.inf)
    labeled = y >= 0
    # Two classes: the paper's single cut with class 1 as v+ gives the same labels (class 0's
    # isolating cut has the same value and its claims lose nothing to the tie rule below).
    binary = n_classes == 2 and np.any(y == 0)
    for c in range(1 if binary else 0, n_classes):  # one cut per class
        mine = y == c
        if not mine.any():
            continue  # no given label of c: c claims nothing, and its cut never wins
        budget.check(f"the isolating cut of class {c}")
        claims[:, c], values[c] = binary_min_cut(W, mine, labeled & ~mine)
    if binary:
        values[0] = values[1]  # "unclaimed" then counts every node outside V+
    n_claims = claims.sum(axis=1)
    # Unclaimed nodes: the class with the most expensive isolating cut (argmax: lowest on ties).
    labels = np.full(n, int(np.argmax(values)), dtype=np.int64)
    single = n_claims == 1
    labels[single] = np.argmax(claims[single], axis=1)
    multi = n_claims > 1
    if multi.any():
        cost = np.where(claims[multi], values[None, :], np.inf)
        labels[multi] = np.argmin(cost, axis=1)
    info = {"cut_values": values, "unclaimed": int(np.sum(n_claims == 0)), "multiply_claimed": int(multi.sum())}
    return labels, claims, info


def potts_cost(W: sp.spmatrix, labels: np.ndarray) -> float:
    """Multiway-cut (Potts) cost: total weight of the edges whose ends get different labels."""
    rows, cols, w = _upper_edges(W)
    return float(w[labels[rows] != labels[cols]].sum())


def _expansion_move(rows, cols, w, labels, fixed, a, infinite, movable=None) -> np.ndarray:
    """Best α-expansion move towards class ``a`` (Boykov, Veksler & Zabih 2001, §3 / Fig 5).

    Each node either keeps its label (source side) or switches to ``a`` (sink side);
    given labels never move. The Potts energy of the move, written as unary terms plus
    one arc per edge, is minimised exactly by one s-t cut. With ``movable`` (a mask),
    only those nodes may switch: the cut is built on them alone, and an edge to a node
    that cannot move becomes a unary term of its movable end (decision 4).
    """
    n = len(labels)
    extra_keep = extra_switch = None
    if movable is not None:
        sub = np.flatnonzero(movable)
        local = np.full(n, -1)
        local[sub] = np.arange(len(sub))
        inside = movable[rows] & movable[cols]
        border = movable[rows] != movable[cols]
        p = np.where(movable[rows[border]], rows[border], cols[border])  # the movable end
        q = np.where(movable[rows[border]], cols[border], rows[border])  # the fixed end
        wb = w[border]
        extra_keep = np.bincount(local[p], wb * (labels[p] != labels[q]), len(sub))
        extra_switch = np.bincount(local[p], wb * (labels[q] != a), len(sub))
        moved = _move_cut(local[rows[inside]], local[cols[inside]], w[inside], labels[sub], fixed[sub], a,
                          infinite, extra_keep, extra_switch)
        out = labels.copy()
        out[sub] = moved
        return out
    return _move_cut(rows, cols, w, labels, fixed, a, infinite, extra_keep, extra_switch)


def _move_cut(rows, cols, w, labels, fixed, a, infinite, extra_keep, extra_switch) -> np.ndarray:
    # Hand-built move graph: PyMaxflow's own α-expansion (maxflow.fastmin) works on grids
    # only, and no library in the lock takes a sparse graph with fixed labels.
    n = len(labels)
    la, lb = labels[rows] == a, labels[cols] == a
    diff = labels[rows] != labels[cols]
    keep_cost = np.zeros(n) if extra_keep is None else extra_keep.astype(float)  # paid if x = 0 (keep)
    # An edge to a node already labelled a costs w unless the other end joins a.
    keep_cost += np.bincount(cols[la & ~lb], w[la & ~lb], n) + np.bincount(rows[lb & ~la], w[lb & ~la], n)
    same = ~la & ~lb & ~diff
    mixed = ~la & ~lb & diff
    # w·(1 - x_p·x_q) = w·(1 - x_p) + w·x_p·(1 - x_q) + const: a unary on p and an arc q -> p.
    keep_cost += np.bincount(rows[mixed], w[mixed], n)
    g = maxflow.Graph[float](n, int(same.sum() + mixed.sum()))
    nodes = g.add_nodes(n)
    if same.any():
        g.add_edges(rows[same], cols[same], w[same], w[same])
    if mixed.any():
        g.add_edges(cols[mixed], rows[mixed], w[mixed], np.zeros(int(mixed.sum())))
    switch_cost = np.where(fixed & (labels != a), infinite, 0.0)
    if extra_switch is not None:
        switch_cost = switch_cost + extra_switch
    g.add_grid_tedges(nodes, switch_cost, keep_cost)
    g.maxflow()
    switch = np.asarray(g.get_grid_segments(nodes), dtype=bool) & (labels != a)
    return np.where(switch, a, labels)


def _movable(W: sp.csr_matrix, labels: np.ndarray, unclaimed: np.ndarray, hops: int) -> np.ndarray:
    """Nodes an expansion may move: the isolation step's unclaimed nodes and every node
    within ``hops`` of an edge whose ends disagree (decision 4)."""
    rows, cols, _ = _upper_edges(W)
    disagree = labels[rows] != labels[cols]
    near = np.zeros(len(labels), dtype=bool)
    near[rows[disagree]] = True
    near[cols[disagree]] = True
    pattern = W.astype(bool).astype(np.float32)
    for _ in range(hops):  # dilate by one hop per product
        near |= (pattern @ near.astype(np.float32)) > 0
    return near | unclaimed


def _expand(W: sp.spmatrix, y: np.ndarray, labels: np.ndarray, n_classes: int, max_sweeps: int,
            unclaimed=None, hops: int | None = None, budget: Budget = UNLIMITED):
    """α-expansion sweeps from ``labels`` until no move lowers the Potts cost (decision 4)."""
    rows, cols, w = _upper_edges(W)
    infinite = 1.0 + 2.0 * float(w.sum())
    fixed = y >= 0
    cost = float(w[labels[rows] != labels[cols]].sum())
    tol = 1e-12 * max(1.0, float(w.sum()))
    sweeps = 0
    W = sp.csr_matrix(W)
    # sweeps over classes, each move one cut; the number run is returned
    for sweeps in range(1, max_sweeps + 1):  # noqa: B007
        improved = False
        movable = None if hops is None else _movable(W, labels, unclaimed, hops)
        for a in range(n_classes):
            if not np.any(y == a):
                continue
            budget.check(f"expansion sweep {sweeps}'s move of class {a}")
            moved = _expansion_move(rows, cols, w, labels, fixed, a, infinite, movable)
            moved_cost = float(w[moved[rows] != moved[cols]].sum())
            if moved_cost < cost - tol:  # strict: ties keep the current (paper-rule) labels
                labels, cost, improved = moved, moved_cost, True
        if not improved:
            break
    return labels, sweeps


def _multiclass(W, y, n_classes, rule, max_sweeps, hops=None, budget: Budget = UNLIMITED):
    labels, claims, info = _one_vs_rest(W, y, n_classes, budget)
    info["sweeps"] = 0
    if rule == "expansion" and n_classes > 2:
        info["isolation_cost"] = potts_cost(W, labels)
        labels, info["sweeps"] = _expand(W, y, labels, n_classes, max_sweeps, claims.sum(axis=1) == 0, hops, budget)
    return labels, info


def _nearest_labeled(problem: LabelProblem, nodes: np.ndarray) -> np.ndarray:
    """Class of the nearest given label (Euclidean, in problem.X) of each node in ``nodes``."""
    from sklearn.neighbors import NearestNeighbors

    X = problem.X
    assert X is not None, "mincut refuses unreached='nearest' without X at the door"
    labeled = np.flatnonzero(problem.labeled)
    _, idx = NearestNeighbors(n_neighbors=1).fit(X[labeled]).kneighbors(X[nodes])
    return problem.y[labeled[idx[:, 0]]]


def _flaggable(W_raw: sp.spmatrix, y: np.ndarray, lone: np.ndarray) -> np.ndarray:
    """Given labels with leave-one-out evidence (decision 8): another given label in their
    component, and another label of their class in the run (``lone``: the problem's
    ``lone_labels``; a class's only label is never flagged)."""
    labeled = y >= 0
    comp = graph_components(W_raw)
    labels_in_comp = np.bincount(comp[labeled], minlength=comp.max() + 1)
    return labeled & (labels_in_comp[comp] >= 2) & ~lone


def _neighbour_vote(W: sp.spmatrix, nodes: np.ndarray, membership: np.ndarray) -> np.ndarray:
    """The share of each of ``nodes``' edge weight on each class of its neighbours'
    ``membership`` (n × C: the randomized cuts' distribution, or the exact labelling one-hot):
    Lemma 3.4's vote for the node with its own label left out; rows of zeros without edges."""
    vote = sp.csr_matrix(W)[nodes] @ membership
    vote = vote.toarray() if sp.issparse(vote) else np.asarray(vote)
    total = vote.sum(axis=1, keepdims=True)
    return np.divide(vote, total, out=np.zeros_like(vote), where=total > 0)


def _membership(labels: np.ndarray, n_classes: int) -> sp.csr_matrix:
    """The labelling one-hot, sparse (n × C doubles of it were a peak of the call)."""
    n = len(labels)
    return sp.csr_matrix((np.ones(n), (np.arange(n), labels)), shape=(n, n_classes))


def _cavity_scores(W: sp.spmatrix, y: np.ndarray, lone: np.ndarray, membership: np.ndarray) -> np.ndarray:
    """Decision 8, ``"cavity"``: the neighbours' vote (``_neighbour_vote``), best other class
    minus the label's own."""
    labeled = y >= 0
    l = np.flatnonzero(labeled)
    share = _neighbour_vote(W, l, membership)
    margin = np.where(share.sum(axis=1) > 0, margin_scores(share, y[l]), -1.0)
    score = per_label(len(y), labeled, margin)
    score[labeled & ~_flaggable(W, y, lone)] = -1.0
    return score


def _without(W, y, alpha, W_raw, removed):
    """Labels and network with the labels ``removed`` left out (α-scaled for the new unlabelled)."""
    y_loo = y.copy()
    y_loo[removed] = -1
    return y_loo, sp.csr_matrix(W if alpha == 1.0 else scale_unlabeled_edges(W_raw, y_loo >= 0, alpha))


def _cut_without(W_loo, y_loo, members, c):
    """Flags and scores of ``members`` (left-out labels of class c) in the c-vs-rest cut."""
    mine = y_loo == c
    kept, _ = binary_min_cut(W_loo, mine, (y_loo >= 0) & ~mine, smallest=False)
    degree = np.asarray(W_loo[members].sum(axis=1)).ravel()
    inside = np.asarray(W_loo[members] @ kept.astype(float)).ravel()
    with np.errstate(divide="ignore", invalid="ignore"):
        score = np.where(degree > 0, (degree - 2 * inside) / degree, -1.0)
    return ~kept[members], score


def colour_labels(W: sp.spmatrix, labeled: np.ndarray, random_state=0) -> np.ndarray:
    """Colour classes of the labelled nodes such that two labels within 2 hops differ.

    An independent set per round (Jones & Plassmann 1993): every uncoloured label whose
    random priority beats those of all its uncoloured 2-hop neighbours takes the round's
    colour. Returns one colour per labelled node (in node order), 0..k-1.
    """
    l = np.flatnonzero(labeled)
    H = sp.csr_matrix(W, copy=True)
    H.data = np.ones_like(H.data)
    H = (H + sp.eye(H.shape[0], format="csr")).tocsc()[:, l]
    conflict = (H.T @ H).tocsr()
    conflict.setdiag(0)
    conflict.eliminate_zeros()
    conflict.data = np.ones_like(conflict.data)
    priority = np.random.default_rng(random_state).permutation(len(l)) + 1.0
    colour = np.full(len(l), -1, dtype=np.int64)
    k = 0
    while (colour < 0).any():  # rounds, one colour each (about the largest 2-hop label count)
        open_ = colour < 0
        rivals = conflict.multiply((priority * open_)[None, :]).tocsr()
        best_rival = rivals.max(axis=1).toarray().ravel()
        colour[open_ & (priority > best_rival)] = k
        k += 1
    return colour


def _loo_flags(W: sp.spmatrix, y: np.ndarray, lone: np.ndarray, alpha: float, W_raw: sp.spmatrix, rule: str,
               random_state, budget: Budget = UNLIMITED) -> tuple[np.ndarray, np.ndarray]:
    """Decision 8: a given label is flagged when no min cut without it keeps it with its class.

    Returns the flags and each label's score: (w_out − w_in) / d_i, the share of its edge
    weight (in the leave-one-out network) to nodes outside minus inside its class's largest
    source side; a flagged label has a positive score, a kept one ≤ 0 (the cut is optimal
    for its own node). ``rule="grouped"`` removes a colour class of labels at once
    (``colour_labels``) and cuts once per class present in it.
    """
    n = len(y)
    labeled = y >= 0
    eligible = np.flatnonzero(_flaggable(W_raw, y, lone))
    flags = np.zeros(n, dtype=bool)
    score = np.full(n, np.nan)
    score[labeled] = -1.0  # no evidence against the label
    if rule == "grouped":
        colour = np.full(n, -1)
        colour[labeled] = colour_labels(W_raw, labeled, random_state)
        batches = [eligible[colour[eligible] == k] for k in np.unique(colour[eligible])]
    else:
        batches = [np.array([i]) for i in eligible]
    for removed in batches:  # one leave-one-out network per batch (a label, or a colour class)
        budget.check("the leave-one-out cuts of the noise flags")
        y_loo, W_loo = _without(W, y, alpha, W_raw, removed)
        for c in np.unique(y[removed]):  # one cut per class in the batch
            members = removed[y[removed] == c]
            if not np.any(y_loo == c):
                # the batch holds every label of c: leave those out one at a time instead
                for i in members:
                    y_i, W_i = _without(W, y, alpha, W_raw, [i])
                    flags[i], score[i] = _cut_without(W_i, y_i, [i], c)
                continue
            flags[members], score[members] = _cut_without(W_loo, y_loo, members, c)
    return flags, score


def randomized_votes(W: sp.spmatrix, y: np.ndarray, n_classes: int, labels: np.ndarray, n_cuts: int,
                     perturbation: float, random_state, multiclass: str, max_sweeps: int, hops: int | None,
                     budget: Budget = UNLIMITED) -> np.ndarray:
    """Share of ``n_cuts`` perturbed runs of the whole multi-class procedure labelling each
    node each class (Blum, Lafferty, Rwebangira & Reddy 2004; decision 8); the exact
    labelling ``labels`` one-hot when ``n_cuts`` is 0."""
    if not n_cuts:
        return one_hot(labels, n_classes)
    rng = np.random.default_rng(random_state)
    votes = np.zeros((len(y), n_classes))
    rows = np.arange(len(y))
    for _ in range(n_cuts):  # one perturbed run per randomized cut
        run_labels, _ = _multiclass(_perturb(W, perturbation, rng), y, n_classes, multiclass, max_sweeps, hops,
                                    budget)
        votes[rows, run_labels] += 1.0
    votes /= n_cuts
    return votes


def mincut(
    problem: LabelProblem,
    *,
    alpha: float = 1.0,
    multiclass: str = "expansion",
    max_sweeps: int = 10,
    expansion_hops: int | None = 0,
    n_cuts: int = 20,
    perturbation: float = 0.5,
    noise: str = "cavity_harmonic",
    noise_threshold: float | None = None,
    unreached: str = "none",
    random_state: int | None = 0,
    time_limit: float | str | None = "auto",
) -> Prediction:
    """Graph mincut labelling of Blum & Chawla (2001), one-vs-rest for more than two classes.

    Parameters
    ----------
    problem : LabelProblem
        ``W`` is used as the edge-weighting function ``w`` (§2 step 3); build it with
        ``similarity.cut_graphs`` (Mincut-3, δ₀, δ½) or ``similarity.knn_graph``.
    alpha : float >= 0, default 1.0
        Scale of the edges between two unlabelled nodes (§5.1, Fig 1); 1 is plain mincut.
    multiclass : {"expansion", "isolation"}, default "expansion"
        With more than two classes: the one-vs-rest isolating cuts with unclaimed nodes
        sent to the most expensive cut's class (``"isolation"``), then improved by
        α-expansion moves on the multiway-cut energy (``"expansion"``); see the module
        docstring, decision 4. Two classes: the paper's binary cut either way.
    max_sweeps : int >= 1, default 10
        Maximum α-expansion sweeps (one cut per class each).
    expansion_hops : int >= 0 or None, default 0
        Expansion moves relabel only the isolation step's unclaimed nodes and the nodes
        within this many hops of an edge whose ends disagree (decision 4); None lets
        every node move (the exact BVZ move).
    n_cuts : int >= 0, default 20
        Number of randomized (perturbed-weight) runs whose vote the ``"cavity"`` and
        ``"cavity_harmonic"`` noise rules read (Blum et al., 2004; decision 7); 0 votes
        with the exact labelling. Other rules run none.
    perturbation : float > 0, default 0.5
        Standard deviation of the log-normal multiplicative noise on each edge weight.
    noise : {"cavity_harmonic", "cavity", "grouped", "loo", "none"}, default "cavity_harmonic"
        How ``noisy`` is computed (module docstring, decision 8): the weighted vote of the
        label's neighbours over the randomized cuts (the exact labelling with ``n_cuts=0``;
        ``"cavity"``), and with the harmonic function's leave-one-out doubting the label
        too (the smaller of the two margins, ``"cavity_harmonic"``); leave-one-out cuts with
        labels far apart left out together (one cut per class and colour class,
        ``"grouped"``); one leave-one-out cut per given label (``"loo"``); or not at all.
    noise_threshold : float in (0, 1] or None, default None
        ``"cavity"`` flags a label when the best other class's share of its neighbours'
        weight beats the given class's by this margin (its ``noise_score``),
        ``"cavity_harmonic"`` when that margin and the harmonic leave-one-out margin both
        reach it. None takes the rule's own, 0.3 for ``"cavity_harmonic"`` and 0.95 for
        ``"cavity"``, each the best development F1 that keeps the clean labels flagged
        under 5% (decision 8). The cut rules flag a label the cut leaves outside its class
        (score > 0) and ignore it.
    unreached : {"none", "paper", "nearest"}, default "none"
        Nodes whose component holds no given label (module docstring, decision 5):
        no label and confidence 0 (``"none"``); the cut's own answer, the paper's tie
        rule (``"paper"``: outside every smallest source side, so the negative class for
        two classes, the most expensive isolating cut's class for more); or the class of
        the nearest given label in feature space (``"nearest"``, needs ``problem.X``).
        Either guess gets the class's share of the given labels as its confidence.
    random_state : int or None, default 0
        Seed of the perturbations.
    time_limit : "auto", float > 0, None or "none", default "auto"
        Seconds the call may take; checked before every cut (isolating, expansion,
        randomized, leave-one-out), so it overruns by at most one max-flow. "auto": 10× an
        estimate of the harmonic solve of this graph, at least 30 s (solvers/_budget.py);
        None or "none": no limit.

    Returns
    -------
    Prediction
        ``labels``: the exact min-cut labels (smallest-``V+`` rule; for more than two
        classes the multiway labelling of ``multiclass``; -1 where no given label is
        reachable).
        ``scores[:, c]``: the harmonic relaxation's calibrated probability of class
        ``c`` (decision 7). ``confidence``: that probability for the returned label (a
        flagged label's node: its neighbours' vote share). ``noisy``: leave-one-out
        flags. ``info``: cut values per class, claim counts, the relaxation's
        ``temperature``, timings.

    Raises
    ------
    SolverOutOfMemory
        Before the cuts, when ``PEAK_BLOCKS`` blocks of n × C float32 and the graph's
        copies exceed the memory the process may take (``solvers/_memory.py``).

    References
    ----------
    Blum, A. & Chawla, S. (2001). Learning from labelled and unlabelled data using graph
    mincuts. ICML. §2 (algorithm, tie rule), §3 Lemma 3.4, §5.1 (α).
    Blum, A., Lafferty, J., Rwebangira, M. R. & Reddy, R. (2004). Semi-supervised
    learning using randomized mincuts. ICML (randomized cuts: the cavity rules' vote).
    Dahlhaus, E. et al. (1994). The complexity of multiterminal cuts. SIAM J. Comput.
    (isolating cuts, used for the multi-class rule).
    Boykov, Y., Veksler, O. & Zabih, R. (2001). Fast approximate energy minimization via
    graph cuts. IEEE TPAMI 23(11) (α-expansion).
    Zhu, X., Ghahramani, Z. & Lafferty, J. (2003). Semi-supervised learning using Gaussian
    fields and harmonic functions. ICML (the relaxation: the confidence, and the
    leave-one-out the default noise rule also asks).
    """
    if not isinstance(problem, LabelProblem):
        raise TypeError(f"problem must be a LabelProblem, got {type(problem).__name__}")
    validate_params(
        {"alpha": alpha, "multiclass": multiclass, "max_sweeps": max_sweeps, "expansion_hops": expansion_hops,
         "n_cuts": n_cuts, "perturbation": perturbation, "noise": noise, "noise_threshold": noise_threshold,
         "unreached": unreached, "time_limit": time_limit}, PARAMETER_CONSTRAINTS)
    if unreached == "nearest" and problem.X is None:
        raise ValueError("unreached='nearest' needs node features: build the LabelProblem with X")
    y, C = problem.y, problem.n_classes
    labeled = problem.labeled
    if not labeled.any():
        raise ValueError("mincut needs at least one given label")
    check_blocks("mincut", problem.n_nodes, C, PEAK_BLOCKS, problem.W.nnz, GRAPH_COPIES, "a score")

    threshold = DEFAULT_THRESHOLDS.get(noise, 0.0) if noise_threshold is None else noise_threshold
    clock = Stopwatch()
    budget = Budget("mincut", time_limit, problem.W, C)
    with clock("cuts"):
        W = scale_unlabeled_edges(problem.W, labeled, alpha)
        labels, cut_info = _multiclass(W, y, C, multiclass, max_sweeps, expansion_hops, budget)

    with clock("relaxation"):  # the confidence (decision 7) and the default noise rule's second opinion
        relaxation = harmonic_relaxation(W, y, C, problem.label_confidence, calibrate=True)
        scores = class_probabilities(relaxation)
        confidence = scores[np.arange(problem.n_nodes), labels]  # the cuts label every node

    votes = np.empty((0, C))
    if noise in CAVITY_RULES:  # the randomized cuts: the cavity rules' neighbour vote only (decision 8)
        with clock("randomized_cuts"):
            votes = randomized_votes(W, y, C, labels, n_cuts, perturbation, random_state, multiclass, max_sweeps,
                                     expansion_hops, budget)

    with clock("noise"):
        noise_score = None
        if noise == "none":
            noisy = np.zeros(problem.n_nodes, dtype=bool)
        elif noise in CAVITY_RULES:
            noise_score = _cavity_scores(W, y, problem.lone_labels, votes)
            if noise == "cavity_harmonic":  # both must doubt the label (decision 8)
                relaxed_margin = relaxation.noise_score
                assert relaxed_margin is not None, "harmonic's noise flags are on by default"
                noise_score[labeled] = np.fmin(noise_score[labeled], relaxed_margin[labeled])
            noisy = labeled & (noise_score >= threshold)
        else:
            noisy, noise_score = _loo_flags(W, y, problem.lone_labels, alpha, problem.W, noise, random_state, budget)

    labels_exact = labels
    no_label = unreachable(problem.W, labeled)
    labels, confidence = finished(labels, confidence, no_label)  # the cuts label every node
    flagged = np.flatnonzero(noisy)
    if flagged.size:  # predicted as its neighbours vote without it (decision 8)
        # by the exact cut's labels, not the randomized cuts' shares: the same answer whether
        # the components are solved together or apart (tests/test_components.py)
        share = _neighbour_vote(W, flagged, _membership(labels_exact, C))
        share[np.arange(flagged.size), y[flagged]] = -1.0  # the class the flag doubts
        voted = share.max(axis=1) > 0  # a leave-one-out cut's flag with no other class around keeps its label
        labels[flagged[voted]] = np.argmax(share[voted], axis=1)
        confidence[flagged[voted]] = share[voted].max(axis=1)
    scores[no_label] = 0.0
    if unreached != "none" and no_label.any():
        guess = labels_exact[no_label] if unreached == "paper" else _nearest_labeled(problem, no_label)
        labels[no_label] = guess
        # a guess, not a cut: its confidence is the class's share of the given labels
        prior = np.bincount(y[labeled], minlength=C) / labeled.sum()
        confidence[no_label] = prior[guess]
        scores[no_label] = prior
    degenerate = one_class_takes_all(np.where(no_label, -1, labels), y, C)
    if degenerate:
        warn_degenerate("mincut", degenerate, DEGENERATE_REASON)
    params = {
        "alpha": alpha,
        "multiclass": multiclass,
        "max_sweeps": int(max_sweeps),
        "expansion_hops": expansion_hops,
        "n_cuts": int(n_cuts),
        "perturbation": perturbation,
        "noise": noise,
        "noise_threshold": threshold if noise in DEFAULT_THRESHOLDS else noise_threshold,
        "unreached": unreached,
        "random_state": random_state,
    }
    info = {
        "time_limit_seconds": budget.limit,
        "cut_values": cut_info["cut_values"].tolist(),
        "unclaimed": cut_info["unclaimed"],
        "multiply_claimed": cut_info["multiply_claimed"],
        "expansion_sweeps": cut_info["sweeps"],
        "isolation_cost": cut_info.get("isolation_cost"),
        "cost": potts_cost(W, labels_exact),
        "degenerate": degenerate,
        "temperature": relaxation.info.get("temperature", 1.0),
        "timings": clock.seconds,
    }
    return Prediction(labels, confidence, noisy, scores, "mincut", params, info, noise_score)
