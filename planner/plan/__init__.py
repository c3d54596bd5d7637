"""The plan: evaluation of the model over a validated input, the derived columns declared once for Python and Excel, calibration, sensitivity sweeps, flags."""
