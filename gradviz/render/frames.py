"""Module frames in the built-in layered layout: each module's frame a rectangle that holds its
members and nothing else, nested as the modules nest.

``dot`` gets this from its clusters; the layered layout (``render/layout.py``) gets it in four
steps, each a loop over the layers, so big graphs stay near-linear:

0. **layers** (``FrameLayout.stacked_layers``): a module starts below whatever feeds it, so the
   blocks of a deep model stack one under the other (``dot`` gets the same from invisible edges,
   ``FrameLayout.order_edges``).
1. **order** (``FrameLayout.order``): every layer is sorted by its nodes' module paths, with one
   key per module for the whole graph (the mean position of its members after the crossing
   sweeps), so a module's nodes are side by side in each layer and sibling modules come in the
   same left-to-right order in every layer. Where a module spans a layer but has no node in it (a
   long edge passes by), a zero-width placeholder stands for it there, so that layer's other
   nodes keep to its sides too.
2. **room** (``FrameLayout.layer_gaps``): the gap below a layer is widened by the frames that
   close there (``GROUP_PAD`` each, nested) and the frames that open in the next layer
   (``GROUP_PAD + GROUP_HEADER`` each), so frames one above the other never touch.
3. **separation** (``FrameLayout.separate``): x positions are moved the least needed to satisfy
   "every member ``GROUP_PAD`` inside its frame, every child frame ``GROUP_PAD`` inside its
   parent's, and neighbours in a layer ``NODE_GAP`` apart, counted from the outermost frame
   edges that lie between them". These are difference constraints over a DAG (the order of
   step 1 is one order for the whole graph), so one pass in topological order pushing right of
   the wanted positions, one pushing left, and their mean (feasible, as both are) solve them.

The frame boxes themselves are drawn around the members afterwards (``layout._groups``); the
steps above only make sure those boxes come out disjoint or nested.
"""
from __future__ import annotations

from collections import defaultdict

GROUP_PAD = 6       # px between a group's frame and its members (and its child groups' frames)
GROUP_HEADER = 18   # px at the top of a group's frame for its header
FRAME_GAP = 12      # px between a frame that closes above a layer gap and one that opens below it
PLACEHOLDER = "\x00"  # starts the id of a placeholder: no graph node id does


class FrameLayout:
    """The module groups of a graph (``layout._module_groups``: parents first, ``members`` being
    every node inside, nested modules included), as the layered layout places them."""

    def __init__(self, groups: list[dict], layer_of: dict):
        self.parent = {group["id"]: group["parent"] for group in groups}
        self.rank = {group["id"]: index for index, group in enumerate(groups)}
        self.groups = [group["id"] for group in groups]
        self.members = {group["id"]: group["members"] for group in groups}
        self.layer_of = dict(layer_of)
        self.innermost: dict[str, str] = {}  # node id -> its innermost group
        for group in groups:  # parents first: a deeper group overwrites
            for member in group["members"]:
                self.innermost[member] = group["id"]
        self.span = {}
        for group in groups:
            layers = [layer_of[member] for member in group["members"]]
            self.span[group["id"]] = (min(layers), max(layers))
        self.chains: dict[str, tuple] = {}
        for group_id in self.groups:  # parents first: the parent's chain is ready
            parent = self.parent[group_id]
            self.chains[group_id] = (self.chains[parent] if parent is not None else ()) + (group_id,)

    def chain(self, node_id: str) -> tuple:
        """The groups holding ``node_id``, outermost first (``()`` for an ungrouped node)."""
        group_id = self.innermost.get(node_id)
        return self.chains[group_id] if group_id is not None else ()

    # -- 0. layers -------------------------------------------------------------------------------
    def stacked_layers(self, ids: list, successors: dict, predecessors: dict):
        """Layers (lists of ids, top first) in which a module starts below whatever feeds it.

        The plain layering puts each node just above its consumer, so the parameters of the next
        block share layers with the end of the block before it, and the two frames can only stand
        side by side: a staircase as wide as the model is deep. Here a node that feeds a module
        from outside sits above that module's top (its depth, the longest path down to the output,
        is at least the deepest member's plus one), unless the module also holds a node upstream
        of it (a layer used twice cannot be all below). One pass, sinks first, in which a node
        waits for its consumers and for the members of the modules it feeds; None where that
        order does not exist (a cycle), and the plain layering stays.
        """
        feeders = self.feeders(ids, successors, predecessors)
        if feeders is None:
            return None
        waiting = {node_id: len(successors[node_id]) for node_id in ids}
        for nodes in feeders.values():
            for node_id in nodes:
                waiting[node_id] += 1
        members_left = {group_id: len(members) for group_id, members in self.members.items()}
        depth = {node_id: 0 for node_id in ids}
        top = {}
        queue = [node_id for node_id in ids if waiting[node_id] == 0]
        for node_id in queue:  # sinks first; a node is ready once its consumers and fed modules are
            value = depth[node_id]
            for group_id in self.chain(node_id):
                top[group_id] = max(top.get(group_id, 0), value)
                members_left[group_id] -= 1
                if members_left[group_id] == 0:
                    for feeder in feeders[group_id]:
                        depth[feeder] = max(depth[feeder], top[group_id] + 1)
                        waiting[feeder] -= 1
                        if waiting[feeder] == 0:
                            queue.append(feeder)
            for parent in predecessors[node_id]:
                depth[parent] = max(depth[parent], value + 1)
                waiting[parent] -= 1
                if waiting[parent] == 0:
                    queue.append(parent)
        if len(queue) != len(ids):
            return None
        deepest = max(depth.values(), default=0)
        layers = [[] for _ in range(deepest + 1)]
        for node_id in ids:
            layers[deepest - depth[node_id]].append(node_id)
        return layers

    def feeders(self, ids: list, successors: dict, predecessors: dict) -> dict | None:
        """``{group id: [node ids]}``: the nodes outside each group that feed it, leaving out those
        with a member of the group upstream (it cannot sit all below them); None on a cycle."""
        bit = {group_id: 1 << index for index, group_id in enumerate(self.groups)}
        upstream = {}  # node id -> bits of the groups holding a node above it (sources first)
        waiting = {node_id: len(predecessors[node_id]) for node_id in ids}
        queue = [node_id for node_id in ids if waiting[node_id] == 0]
        for node_id in queue:  # grows while it is read: Kahn's algorithm
            bits = 0
            for parent in predecessors[node_id]:
                bits |= upstream[parent]
                for group_id in self.chain(parent):
                    bits |= bit[group_id]
            upstream[node_id] = bits
            for child in successors[node_id]:
                waiting[child] -= 1
                if waiting[child] == 0:
                    queue.append(child)
        if len(queue) != len(ids):
            return None
        feeders = defaultdict(list)
        for node_id in ids:
            own = set(self.chain(node_id))
            fed = {group_id for child in successors[node_id] for group_id in self.chain(child)
                   if group_id not in own and not upstream[node_id] & bit[group_id]}
            for group_id in sorted(fed, key=self.rank.__getitem__):
                feeders[group_id].append(node_id)
        return feeders

    def order_edges(self, ids: list, successors: dict, predecessors: dict, layer_of: dict) -> list:
        """``(feeder, source)`` pairs that make ``dot`` stack modules as ``stacked_layers`` does:
        drawn as invisible edges, each puts a module's source node (a parameter's leaf) below a
        node that feeds the module, where the plain layering would put it level or above."""
        feeders = self.feeders(ids, successors, predecessors)
        if feeders is None:
            return []
        pairs = {}
        for group_id, nodes in feeders.items():
            sources = [member for member in self.members[group_id] if not predecessors[member]]
            for node_id in nodes:
                for source in sources:
                    if layer_of[source] <= layer_of[node_id]:
                        pairs[(node_id, source)] = None
        return list(pairs)

    # -- 1. order -------------------------------------------------------------------------------
    def order(self, layers: list[list[str]]) -> None:
        """Sort each layer (in place) by module path, adding placeholders where a module spans a
        layer without a node in it (see the module docstring)."""
        position = {node_id: index for layer in layers for index, node_id in enumerate(layer)}
        group_keys = {}
        for group_id in self.groups:
            members = self.members[group_id]
            group_keys[group_id] = sum(position[member] for member in members) / len(members)
        self._add_placeholders(layers, position, group_keys)
        rank = self.rank
        for layer in layers:
            if len(layer) < 2:
                continue
            keys = {}
            for index, node_id in enumerate(layer):
                path = [(group_keys[group_id], 0, rank[group_id]) for group_id in self.chain(node_id)]
                path.append((position[node_id], 1, index))
                keys[node_id] = path
            layer.sort(key=keys.__getitem__)

    def _add_placeholders(self, layers, position, keys) -> None:
        covered = [set() for _ in layers]
        for node_id, group_id in self.innermost.items():
            covered[self.layer_of[node_id]].update(self.chains[group_id])
        for group_id in reversed(self.groups):  # children first: a child's placeholder covers its parents
            first, last = self.span[group_id]
            for layer_index in range(first, last + 1):
                if group_id in covered[layer_index]:
                    continue
                placeholder = f"{PLACEHOLDER}{group_id}@{layer_index}"
                layers[layer_index].append(placeholder)
                self.innermost[placeholder] = group_id
                self.layer_of[placeholder] = layer_index
                position[placeholder] = keys[group_id]
                covered[layer_index].update(self.chains[group_id])

    # -- 2. room --------------------------------------------------------------------------------
    def layer_gaps(self, layer_count: int, layer_gap: float) -> tuple[list, float, float]:
        """``(gap below each layer, room above the first, room below the last)`` in px."""
        opening, closing = self._nesting(0), self._nesting(1)
        opens, closes = [0] * layer_count, [0] * layer_count
        for group_id in self.groups:
            first, last = self.span[group_id]
            opens[first] = max(opens[first], opening[group_id])
            closes[last] = max(closes[last], closing[group_id])
        head = GROUP_PAD + GROUP_HEADER
        gaps = [max(layer_gap, closes[k] * GROUP_PAD + opens[k + 1] * head + FRAME_GAP)
                for k in range(layer_count - 1)]
        return gaps, opens[0] * head if layer_count else 0, closes[-1] * GROUP_PAD if layer_count else 0

    def _nesting(self, end: int) -> dict:
        """How many frames open (``end`` 0) or close (``end`` 1) at a group's first (last) layer,
        itself and the children sharing that layer, nested: each needs its own band of room."""
        depth = {}
        for group_id in reversed(self.groups):  # children first
            depth[group_id] = max(depth.get(group_id, 0), 1)
            parent = self.parent[group_id]
            if parent is not None and self.span[parent][end] == self.span[group_id][end]:
                depth[parent] = max(depth.get(parent, 0), depth[group_id] + 1)
        return depth

    # -- 3. separation --------------------------------------------------------------------------
    def separate(self, layers: list[list[str]], x: dict, widths: dict, node_gap: float) -> dict:
        """New x centres for every entry of ``layers`` (placeholders included), as close to ``x``
        as the frame constraints allow (see the module docstring)."""
        after = defaultdict(list)   # variable -> [(variable, least distance from it)]
        before = defaultdict(list)
        variables = {}

        def need(left, right, distance):
            after[left].append((right, distance))
            before[right].append((left, distance))
            variables[left] = variables[right] = None

        for layer in layers:
            for node_id in layer:
                variables[node_id] = None
                chain = self.chain(node_id)
                if chain:
                    half = widths[node_id] / 2
                    need(("L", chain[-1]), node_id, GROUP_PAD + half)
                    need(node_id, ("R", chain[-1]), half + GROUP_PAD)
            for left, right in zip(layer, layer[1:]):
                left_chain, right_chain = self.chain(left), self.chain(right)
                shared = 0
                while (shared < len(left_chain) and shared < len(right_chain)
                       and left_chain[shared] == right_chain[shared]):
                    shared += 1
                left_var, left_half = ((("R", left_chain[shared]), 0) if len(left_chain) > shared
                                       else (left, widths[left] / 2))
                right_var, right_half = ((("L", right_chain[shared]), 0) if len(right_chain) > shared
                                         else (right, widths[right] / 2))
                need(left_var, right_var, left_half + node_gap + right_half)
        for group_id in self.groups:
            parent = self.parent[group_id]
            if parent is not None:
                need(("L", parent), ("L", group_id), GROUP_PAD)
                need(("R", group_id), ("R", parent), GROUP_PAD)
        order = _topological(variables, after, before)
        if order is None:  # the order of step 1 rules a cycle out; never fail a drawing over it
            return dict(x)
        inf = float("inf")
        pushed_right, pushed_left = {}, {}
        for variable in order:
            value = x[variable] if type(variable) is str else -inf
            for left, distance in before[variable]:
                value = max(value, pushed_right[left] + distance)
            pushed_right[variable] = value
        for variable in reversed(order):
            value = x[variable] if type(variable) is str else inf
            for right, distance in after[variable]:
                value = min(value, pushed_left[right] - distance)
            pushed_left[variable] = value
        return {node_id: (pushed_right[node_id] + pushed_left[node_id]) / 2
                for layer in layers for node_id in layer}

    def reach(self, node_id: str) -> float:
        """How far the frames around ``node_id`` reach past its box on the left or right."""
        return GROUP_PAD * len(self.chain(node_id))


def is_placeholder(node_id: str) -> bool:
    return node_id.startswith(PLACEHOLDER)


def _topological(variables: dict, after: dict, before: dict) -> list:
    """Kahn's algorithm; None on a cycle (the constraints follow one left-to-right order)."""
    remaining = {variable: len(before[variable]) for variable in variables}
    queue = [variable for variable, count in remaining.items() if count == 0]
    head = 0
    while head < len(queue):
        variable = queue[head]
        head += 1
        for right, _ in after[variable]:
            remaining[right] -= 1
            if remaining[right] == 0:
                queue.append(right)
    return queue if len(queue) == len(variables) else None
