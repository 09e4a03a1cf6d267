#!/usr/bin/env python3
"""Tests of moto_server.py's fixes: python3 scripts/moto_server_test.py

Each DeleteMessage test runs one delete and, in the middle of its scan of
the queue, the requests another thread may serve meanwhile (a delete, a
send, a receive that dead-letters), then checks the queue holds what SQS
would. The FIFO test lets a group's messages time out in flight and checks
they come back in order. Each runs moto's own code and the launcher's:
moto's must break the rule (else moto was fixed and that fix can go), the
launcher's must keep it.
"""

import contextlib
import json
import os
import sys
import unittest
import uuid
from unittest import mock

from moto.sqs import models

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import moto_server  # noqa: E402

MOTOS = models.Queue.delete_message
OURS = moto_server.delete_message


class DeleteMessage(unittest.TestCase):
    def setUp(self):
        self.backend = models.sqs_backends["000000000000"]["us-east-1"]
        name = "t-" + uuid.uuid4().hex[:8]
        self.dlq = self.backend.create_queue(name + "-dlq")
        redrive = json.dumps({"deadLetterTargetArn": self.dlq.queue_arn, "maxReceiveCount": "1"})
        self.queue = self.backend.create_queue(name, VisibilityTimeout="60", RedrivePolicy=redrive)
        self.name = name

    def tearDown(self):
        self.backend.delete_queue(self.name)
        self.backend.delete_queue(self.name + "-dlq")

    def received(self, body):
        """Sends body, receives it and returns its receipt handle."""
        self.backend.send_message(self.name, body)
        (m,) = self.backend.receive_message(self.name, 1, 0, 60)
        return m.receipt_handle

    def bodies(self, queue):
        return sorted(m.body for m in queue._messages)

    def delete_while(self, delete, receipt_handle, meanwhile):
        """Deletes the first message, and runs meanwhile() when the delete
        looks at the second one: after it found its message, before it is
        done with the queue."""
        second = self.queue._messages[1]
        scan = second.had_receipt_handle

        def hooked(handle):
            del second.had_receipt_handle  # once
            meanwhile()
            return scan(handle)

        second.had_receipt_handle = hooked
        delete(self.queue, receipt_handle)

    def test_a_send_and_a_delete_meanwhile(self):
        for delete, intact in ((MOTOS, False), (OURS, True)):
            with self.subTest(delete=delete.__module__):
                a, b = self.received("a"), self.received("b")

                def meanwhile():
                    delete(self.queue, b)
                    self.backend.send_message(self.name, "c")

                self.delete_while(delete, a, meanwhile)
                got = self.bodies(self.queue)
                self.assertEqual(got == ["c"], intact, f"queue holds {got}, want only c")
                self.queue._messages.clear()

    def test_a_dead_letter_meanwhile(self):
        for delete, intact in ((MOTOS, False), (OURS, True)):
            with self.subTest(delete=delete.__module__):
                a, b = self.received("a"), self.received("b")
                for m in self.queue._messages:
                    if m.body == "b":
                        m.change_visibility(0)  # b comes back with its one receive spent

                def meanwhile():
                    self.assertEqual(self.backend.receive_message(self.name, 10, 0, 60), [])

                self.delete_while(delete, a, meanwhile)
                got = self.bodies(self.queue), self.bodies(self.dlq)
                self.assertEqual(got == ([], ["b"]), intact, f"queue and DLQ hold {got}, want b in the DLQ only")
                self.queue._messages.clear()
                self.dlq._messages.clear()


class FifoRedelivery(unittest.TestCase):
    def setUp(self):
        self.backend = models.sqs_backends["000000000000"]["us-east-1"]
        self.name = "t-" + uuid.uuid4().hex[:8] + ".fifo"
        self.queue = self.backend.create_queue(self.name, FifoQueue="true", VisibilityTimeout="60")

    def tearDown(self):
        self.backend.delete_queue(self.name)

    def receive(self):
        return [m.body for m in self.backend.receive_message(self.name, 10, 0, 60)]

    def test_a_group_timed_out_in_flight_comes_back_in_order(self):
        for patched in (False, True):
            launcher = mock.patch.multiple(models.Queue, **moto_server.PATCHES) if patched else contextlib.nullcontext()
            with self.subTest(patched=patched), launcher:
                for body in ("0", "1", "2"):
                    self.backend.send_message(self.name, body, deduplication_id=body, group_id="g")
                self.assertEqual(self.receive(), ["0", "1", "2"])
                self.assertEqual(self.receive(), [], "the group is in flight")
                for m in self.queue._messages:
                    m.visible_at = 0  # nobody deleted them: their visibility timeout ran out
                got = self.receive()
                self.assertEqual(got == ["0", "1", "2"], patched, f"the group came back as {got}, want 0, 1, 2")
                self.queue._messages.clear()
                self.queue.pending_messages.clear()


if __name__ == "__main__":
    unittest.main()
