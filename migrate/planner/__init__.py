"""Movement-minimal reassignment plans: numpy and OR-Tools, no I/O.

One optimisation behind both callers: ``reassign --generate`` (Kafka's question, balanced per topic:
:mod:`.generate`) and the fleet pipeline's ``pipeline plan`` (decommission, add-brokers, rebalance, fix-racks,
balanced per cluster: :func:`plan`, called per cluster inside a Spark ``applyInPandas``). Modules: ``request``
(operations -> targets and racks), ``model`` (the types and the indexed arrays), ``reach`` (the balance band any
plan meeting the rack rule can reach: per rack when the racks force it), ``bounds`` (the lower bound on moves),
``replicas`` (replica placement: one min-cost flow), ``leaders`` (preferred leaders by reordering: a second
flow), ``flow`` (the layer over OR-Tools both share), ``check`` (the constraints re-checked on the result),
``core`` (:func:`solve` and :func:`plan`), ``generate`` (the per-topic scope), ``kafka`` (Kafka's
``--generate`` counted for comparison), ``waves`` (moves packed under a per-broker cap).
"""

from migrate.planner.bounds import lower_bound
from migrate.planner.core import plan
from migrate.planner.model import Layout, Plan, PlanRequestError

__all__ = ["Layout", "Plan", "PlanRequestError", "lower_bound", "plan"]
