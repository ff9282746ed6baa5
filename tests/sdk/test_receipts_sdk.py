"""The Python SDK's erasure receipts (issue 70): a 204 removal returns the receipt id from
``X-Erasure-Receipt``, forget and fact delete carry the receipt, ``receipts.get`` and
``receipts.verify`` read and re-check it, over the local server."""

from __future__ import annotations


def test_removals_return_receipts_that_verify_clean(memory):
    written = memory.remember("Priya Raman moved to Tromso last spring.")
    receipt_id = memory.sessions.delete(written.session_id)
    assert receipt_id and receipt_id.startswith("rcpt_")
    receipt = memory.receipts.get(receipt_id)
    assert receipt.action == "session.delete" and receipt.records["turn"]
    checked = memory.receipts.verify(receipt_id)
    assert checked.clean is True and checked.remaining == []

    memory.remember("Priya Raman likes cloudberries.")
    forgot = memory.forget("Priya Raman likes cloudberries", min_score=0.2, purge=True)
    assert forgot.receipt is not None and forgot.receipt.id and forgot.receipt.purge is True
    assert memory.receipts.verify(forgot.receipt.id).clean is True

    preview = memory.forget("Priya Raman", dry_run=True, min_score=0.1)
    assert preview.receipt is not None and preview.receipt.id is None and preview.receipt.dry_run is True
