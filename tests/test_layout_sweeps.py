"""The layered layout places again only the layers whose neighbours moved (``render/layout._place``):
the positions must be exactly those of full sweeps, which this file writes out plainly."""
from __future__ import annotations

import random

import pytest

from fixtures import shapes
from gradviz.render import layout
from gradviz.render.node_text import shared_lines
from gradviz.snapshot import graph_of


def full_sweeps(layers, sizes, successors, predecessors, layer_gaps=None, above=0):
    """``_place`` as it was: every layer placed again in every sweep."""
    sweeps = 8 if len(sizes) <= layout.GROUP_ABOVE else 4
    x = {}
    for layer in layers:
        cursor = 0.0
        for node_id in layer:
            x[node_id] = cursor + sizes[node_id][0] / 2
            cursor += sizes[node_id][0] + layout.NODE_GAP
    neighbours = {node_id: predecessors[node_id] + successors[node_id] for node_id in x}
    for sweep in range(sweeps):
        order = range(1, len(layers)) if sweep % 2 == 0 else range(len(layers) - 2, -1, -1)
        for layer_index in order:
            layer = layers[layer_index]
            wanted = [sum(x[other] for other in neighbours[n]) / len(neighbours[n]) if neighbours[n] else x[n]
                      for n in layer]
            if len(layer) == 1:
                x[layer[0]] = wanted[0]
                continue
            gaps = [(sizes[a][0] + sizes[b][0]) / 2 + layout.NODE_GAP for a, b in zip(layer, layer[1:])]
            for node_id, value in zip(layer, layout.closest_spaced(wanted, gaps)):
                x[node_id] = value
    left = min((x[n] - sizes[n][0] / 2 for n in x), default=0.0)
    positions, y, right, gap = {}, layout.MARGIN + above, 0.0, 0
    for index, layer in enumerate(layers):
        layer_height = max(sizes[n][1] for n in layer)
        for node_id in layer:
            width, height = sizes[node_id]
            center_x = x[node_id] - left + layout.MARGIN
            positions[node_id] = [round(center_x, 1), round(y + layer_height / 2, 1), width, height]
            right = max(right, center_x + width / 2)
        gap = layer_gaps[index] if layer_gaps is not None and index < len(layer_gaps) else layout.LAYER_GAP
        y += layer_height + gap
    return positions, round(right + layout.MARGIN), round(y - gap + layout.MARGIN)


def random_dag(seed: int, nodes: int):
    """A random program: each new value combines one or two earlier ones (a graph with wide layers)."""
    import gradviz as gv

    rng = random.Random(seed)
    values = [gv.tensor(rng.uniform(-1, 1), requires_grad=True) for _ in range(rng.randint(1, 4))]
    for _ in range(nodes):
        a = rng.choice(values)
        values.append(gv.sin(a) if rng.random() < 0.4 else a * rng.choice(values) + rng.uniform(-1, 1))
    return values[-1]


CASES = {"chain 3000": lambda: shapes.chain(3000), "chain 40": lambda: shapes.chain(40),
         "fan-out 120": lambda: shapes.fan_out(120), "rnn 60": lambda: shapes.unrolled_rnn(60),
         **{f"random {seed}": (lambda seed=seed: random_dag(seed, 30 + 40 * seed)) for seed in range(6)}}


@pytest.mark.parametrize("case", CASES)
def test_placing_only_moved_layers_gives_the_positions_of_full_sweeps(case):
    graph = graph_of(CASES[case](), {})
    sizes = layout._sizes(graph, shared_lines(graph.nodes))
    shape = layout.Shape(graph)
    layers = [list(layer) for layer in shape.layers]
    layout._order_layers(layers, shape.successors, shape.predecessors)
    gaps = [layout.LAYER_GAP + (index % 3) for index in range(len(layers) - 1)]
    for options in ({}, {"layer_gaps": gaps, "above": 7}):
        assert (layout._place(layers, sizes, shape.successors, shape.predecessors, **options)
                == full_sweeps(layers, sizes, shape.successors, shape.predecessors, **options))
