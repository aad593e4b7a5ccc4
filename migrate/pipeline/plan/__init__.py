"""Movement-minimal reassignment plans for one cluster: pure Python, numpy and OR-Tools.

Called per cluster inside a Spark ``applyInPandas`` (``migrate.pipeline.planning``), so it imports only zkmodel
and the pure parts of ``migrate.reassign`` and does no I/O except :func:`write_plan_files`. Modules:
``request`` (operations -> targets and racks), ``model`` (the types and the indexed arrays), ``reach`` (the
balance band any plan meeting the rack rule can reach: per rack when the racks force it), ``bounds`` (the
lower bound on moves), ``replicas`` (replica placement: one min-cost flow), ``leaders`` (preferred leaders by
reordering: a second flow), ``check`` (the constraints re-checked on the result), ``kafka`` (Kafka's
``--generate`` for comparison), ``files`` (waves and plan files), ``core`` (``plan()``).
"""

from migrate.pipeline.plan.bounds import lower_bound
from migrate.pipeline.plan.core import plan
from migrate.pipeline.plan.files import write_plan_files
from migrate.pipeline.plan.model import Layout, Plan, PlanRequestError

__all__ = ["Layout", "Plan", "PlanRequestError", "lower_bound", "plan", "write_plan_files"]
