"""Whether a test's recorded output passes, by ColBench's rule: it equals the reference's output,
and the reference's output is not None. Both are plain data as the sandbox encodes it; nothing is run
here, so what reads recorded episodes (the report) needs no sandbox."""

from __future__ import annotations

from sweetflow.backend.sandbox import plaindata

# Decoding or comparing plain data can still raise (Decimal('sNaN') == 1, deep nesting): a fail.
COMPARISON_ERRORS = (plaindata.EncodingError, ArithmeticError, RecursionError, TypeError, ValueError)


def passes_test(expected: str | None, output: str | None) -> bool:
    if expected is None or output is None:
        return False
    try:
        reference = plaindata.loads(expected)
        if reference is None:
            return False
        return bool(reference == plaindata.loads(output))  # ColBench: ground_truth_output == test_output
    except COMPARISON_ERRORS:
        return False
