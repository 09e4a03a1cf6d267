#!/usr/bin/env python3
"""moto_server with two fixes to its SQS queues (moto 5.2.1).

Run it like moto_server:  python3 scripts/moto_server.py -H 127.0.0.1 -p 5000

1. DeleteMessage removes the message from its queue in place.

moto serves each request on a thread of its own. Its DeleteMessage builds a
copy of the queue's message list without the message and puts the copy back,
while SendMessage appends to the list and ReceiveMessage removes the messages
it moves to the dead-letter queue. So, under concurrent requests, moto
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

2. A FIFO message group comes back in order after a visibility timeout.

SQS hands out a FIFO group's messages oldest first, and none while one of
the group is in flight (received, neither deleted nor timed out); once the
in-flight ones time out, the oldest comes back first. moto's ReceiveMessage
takes a message whose visibility timeout ran out back from its in-flight set
only when its scan reaches it, and then asks whether the group still has a
message in flight. When several messages of a group timed out together (one
receive took them, nobody deleted them), the first one finds its successors
still in that set, is skipped as if its group were busy, and the next one,
the last left there, goes out ahead of it: a consumer sees event 1 before
event 0, which SQS never does.

Here a message counts as in flight only while it is hidden, and the list a
receive scans releases the timed-out messages from the in-flight set before
the scan starts. The scan then never meets one, keeps the groups it found
busy at its start, and hands out each free group's messages in order.
"""

from moto import server
from moto.sqs import models

_moto_messages = models.Queue.messages


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


def pending_message_groups(queue):
    """Queue.pending_message_groups of moto 5.2.1: the groups with a message
    in flight, counting only the messages still hidden."""
    return {m.group_id for m in list(queue.pending_messages) if m.group_id is not None and not m.visible}


def messages(queue):
    """Queue.messages of moto 5.2.1 (the visible messages, in the order they
    were sent), after releasing from the in-flight set the messages whose
    visibility timeout ran out."""
    for m in list(queue.pending_messages):
        if m.visible:
            queue.pending_messages.discard(m)
    return _moto_messages.fget(queue)


# The replacements of moto's Queue members, by name.
PATCHES = {
    "delete_message": delete_message,
    "pending_message_groups": property(pending_message_groups),
    "messages": property(messages),
}

if __name__ == "__main__":
    for name, value in PATCHES.items():
        setattr(models.Queue, name, value)
    server.main()
