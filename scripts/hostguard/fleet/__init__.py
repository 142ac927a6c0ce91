"""The fleet's State Manager step, run on each instance of a fleet (carried inline in the SSM document)."""
