// Package sqs is a consuming service's SQS adapter (the ledger's, the
// webhooks service's): the consumer that long-polls the service's queue
// with N workers and hands each message body to the inbox
// (application/inbox), the DLQ depth poller, and the operator's DLQ redrive.
//
// The consumer's one rule is the inbox pattern's: acknowledge (delete) a
// message only after the transaction that applied it committed. Everything
// else follows from at-least-once delivery:
//
//   - before anything else, a message must carry the payments service's
//     signature of its body (provenance.go): one that does not is copied to
//     the DLQ with its reason and deleted, and the inbox never sees it;
//   - a message whose delete fails, or whose process dies before deleting,
//     comes back and is absorbed by the inbox as a duplicate;
//   - a message that can never apply (unparseable, or a known event with
//     invalid data) is not acknowledged: the queue's RedrivePolicy moves it to
//     the DLQ after maxReceiveCount receives, and the other messages go on;
//   - an event type this version does not handle is recorded in the inbox,
//     counted and acknowledged, so a new event type never poisons an older
//     consumer;
//   - a handler that runs long has its message's visibility extended, so no
//     other worker picks the message up while it is still being applied;
//   - a stop spends no receive: it starts no new receive, lets the long polls
//     in flight return and applies what they bring, because the broker
//     would still hand messages to a poll its caller abandoned. What a stop
//     or a handler timeout leaves unapplied is released (made visible again
//     at once) rather than hidden until its visibility timeout.
package sqs
