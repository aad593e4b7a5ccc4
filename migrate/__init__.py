"""Operator tooling: reassignment CLI, snapshot export, lockdown, upgrade rehearsal, Spark pipeline."""
