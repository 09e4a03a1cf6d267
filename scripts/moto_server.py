#!/usr/bin/env python3
"""moto_server whose SQS DeleteMessage removes the message from its queue in place.

Run it like moto_server:  python3 scripts/moto_server.py -H 127.0.0.1 -p 5000

moto (5.2.1 and earlier) serves each request on a thread of its own. Its
DeleteMessage builds a copy of the queue's message list without the message
and puts the copy back, while SendMessage appends to the list and
ReceiveMessage removes the messages it moves to the dead-letter queue. So,
under concurrent requests, moto
  - loses a message sent while a delete runs (the copy put back lacks it), and
  - brings back a message that another request deleted or dead-lettered
    meanwhile (one message can then reach the DLQ twice).
A real queue does neither, and a test that counts messages (the fault suite,
tools/faultsuite) then blames the services for what moto did.

Here DeleteMessage finds the message and removes that object from the list
with list.remove, one step under the interpreter lock, so it neither drops
what others added nor restores what others removed. A lock around the queue
would do the same, but moto's ReceiveMessage scans the whole queue several
times per message it returns: sends and deletes queued behind it would time
out under load. Two concurrent receives can still both return the same
message, as SQS may: at-least-once delivery, which the services absorb.
"""

from moto import server
from moto.sqs import models


def delete_message(queue, receipt_handle):
    """Queue.delete_message of moto 5.2.1, removing in place."""
    if receipt_handle in queue.deleted_messages:
        return  # deleted before: SQS accepts a second delete
    found = [m for m in list(queue._messages) if m.had_receipt_handle(receipt_handle)]
    if not found:
        raise models.ReceiptHandleIsInvalid()
    for message in found:
        queue.pending_messages.discard(message)
        queue.deleted_messages.update(message.all_receipt_handles)
        try:
            queue._messages.remove(message)
        except ValueError:
            pass  # removed meanwhile: deleted or dead-lettered by another request


if __name__ == "__main__":
    models.Queue.delete_message = delete_message
    server.main()
