package sqs_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// fakeSQS is a hand-written, in-memory stand-in for the SQS API: each queue is
// a list of messages handed out once by ReceiveMessage. A long poll on an
// empty queue waits, like SQS, until a message arrives or its wait time ends
// — and, unlike SQS, also returns when its caller's context is cancelled, so a
// consumer that abandons its polls is visible as a receive cancelled with
// messages still to come. It records calls so tests can check their order.
type fakeSQS struct {
	mu        sync.Mutex
	queues    map[string][]types.Message
	arrived   chan struct{} // closed and replaced whenever put adds messages
	calls     []string
	deleted   map[string][]string                             // queue → receipt handles
	released  map[string][]string                             // queue → receipt handles made visible again (visibility 0)
	failSend  map[string]bool                                 // bodies whose send fails
	sent      map[string][]types.SendMessageBatchRequestEntry // queue → entries sent to it
	failDel   bool                                            // DeleteMessageBatch reports every entry Failed
	received  chan struct{}                                   // signalled after a receive hands out the last message
	receives  int                                             // ReceiveMessage calls so far
	polling   int                                             // long polls waiting now
	abandoned int                                             // long polls whose caller gave up before the wait ended
}

func newFakeSQS() *fakeSQS {
	return &fakeSQS{
		queues: map[string][]types.Message{}, arrived: make(chan struct{}), deleted: map[string][]string{},
		released: map[string][]string{}, failSend: map[string]bool{}, received: make(chan struct{}, 1),
		sent: map[string][]types.SendMessageBatchRequestEntry{},
	}
}

func (f *fakeSQS) put(queue string, bodies ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range bodies {
		n := strconv.Itoa(len(f.queues[queue]) + len(f.deleted[queue]))
		f.queues[queue] = append(f.queues[queue], types.Message{
			MessageId: aws.String(queue + "-" + n), ReceiptHandle: aws.String("rh-" + queue + "-" + n), Body: aws.String(b),
		})
	}
	close(f.arrived)
	f.arrived = make(chan struct{})
}

// putMessage adds m, with its attributes, to queue; put fills in its id
// and receipt handle.
func (f *fakeSQS) putMessage(queue string, m types.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := strconv.Itoa(len(f.queues[queue]) + len(f.deleted[queue]))
	m.MessageId, m.ReceiptHandle = aws.String(queue+"-"+n), aws.String("rh-"+queue+"-"+n)
	f.queues[queue] = append(f.queues[queue], m)
	close(f.arrived)
	f.arrived = make(chan struct{})
}

// queued is how many messages wait in queue.
func (f *fakeSQS) queued(queue string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queues[queue])
}

// sentTo returns the entries sent to queue so far.
func (f *fakeSQS) sentTo(queue string) []types.SendMessageBatchRequestEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]types.SendMessageBatchRequestEntry(nil), f.sent[queue]...)
}

func (f *fakeSQS) record(call string) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
}

func (f *fakeSQS) ReceiveMessage(ctx context.Context, in *awssqs.ReceiveMessageInput, _ ...func(*awssqs.Options)) (*awssqs.ReceiveMessageOutput, error) {
	q := aws.ToString(in.QueueUrl)
	f.mu.Lock()
	f.receives++
	f.mu.Unlock()
	wait := time.NewTimer(time.Duration(in.WaitTimeSeconds) * time.Second)
	defer wait.Stop()
	for {
		f.mu.Lock()
		n := min(int(in.MaxNumberOfMessages), len(f.queues[q]))
		msgs := f.queues[q][:n]
		f.queues[q] = f.queues[q][n:]
		empty := len(f.queues[q]) == 0
		arrived := f.arrived
		if n == 0 {
			f.polling++
		}
		f.mu.Unlock()
		if n > 0 {
			f.record("receive")
			if empty {
				select {
				case f.received <- struct{}{}:
				default:
				}
			}
			return &awssqs.ReceiveMessageOutput{Messages: msgs}, nil
		}
		var err error
		select {
		case <-arrived:
		case <-wait.C:
			err = errWaitOver
		case <-ctx.Done():
			err = ctx.Err()
		}
		f.mu.Lock()
		f.polling--
		if err != nil && err != errWaitOver {
			f.abandoned++
		}
		f.mu.Unlock()
		switch {
		case err == errWaitOver:
			return &awssqs.ReceiveMessageOutput{}, nil
		case err != nil:
			return nil, err
		}
	}
}

// errWaitOver ends a long poll that found nothing.
var errWaitOver = errors.New("wait time over")

// polls reports how many receives were called and how many are waiting now.
func (f *fakeSQS) polls() (called, waiting int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.receives, f.polling
}

func (f *fakeSQS) DeleteMessageBatch(_ context.Context, in *awssqs.DeleteMessageBatchInput, _ ...func(*awssqs.Options)) (*awssqs.DeleteMessageBatchOutput, error) {
	f.record("delete")
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &awssqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		if f.failDel {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid")})
			continue
		}
		q := aws.ToString(in.QueueUrl)
		f.deleted[q] = append(f.deleted[q], aws.ToString(e.ReceiptHandle))
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (f *fakeSQS) ChangeMessageVisibility(context.Context, *awssqs.ChangeMessageVisibilityInput, ...func(*awssqs.Options)) (*awssqs.ChangeMessageVisibilityOutput, error) {
	f.record("visibility0")
	return &awssqs.ChangeMessageVisibilityOutput{}, nil
}

func (f *fakeSQS) ChangeMessageVisibilityBatch(_ context.Context, in *awssqs.ChangeMessageVisibilityBatchInput, _ ...func(*awssqs.Options)) (*awssqs.ChangeMessageVisibilityBatchOutput, error) {
	if len(in.Entries) > 0 && in.Entries[0].VisibilityTimeout == 0 {
		f.record("release")
		f.mu.Lock()
		q := aws.ToString(in.QueueUrl)
		for _, e := range in.Entries {
			f.released[q] = append(f.released[q], aws.ToString(e.ReceiptHandle))
		}
		f.mu.Unlock()
	} else {
		f.record("extend")
	}
	return &awssqs.ChangeMessageVisibilityBatchOutput{}, nil
}

func (f *fakeSQS) GetQueueAttributes(_ context.Context, in *awssqs.GetQueueAttributesInput, _ ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error) {
	q := aws.ToString(in.QueueUrl)
	return &awssqs.GetQueueAttributesOutput{Attributes: map[string]string{
		"QueueArn": "arn:" + q, "VisibilityTimeout": "30", "MessageRetentionPeriod": "345600",
		"ApproximateNumberOfMessages": strconv.Itoa(len(f.queues[q])),
	}}, nil
}

func (f *fakeSQS) SendMessageBatch(_ context.Context, in *awssqs.SendMessageBatchInput, _ ...func(*awssqs.Options)) (*awssqs.SendMessageBatchOutput, error) {
	f.record("send")
	out := &awssqs.SendMessageBatchOutput{}
	for _, e := range in.Entries {
		if f.failSend[aws.ToString(e.MessageBody)] {
			out.Failed = append(out.Failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("InternalError")})
			continue
		}
		f.put(aws.ToString(in.QueueUrl), aws.ToString(e.MessageBody))
		f.mu.Lock()
		f.sent[aws.ToString(in.QueueUrl)] = append(f.sent[aws.ToString(in.QueueUrl)], e)
		f.mu.Unlock()
		out.Successful = append(out.Successful, types.SendMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func (f *fakeSQS) StartMessageMoveTask(context.Context, *awssqs.StartMessageMoveTaskInput, ...func(*awssqs.Options)) (*awssqs.StartMessageMoveTaskOutput, error) {
	return nil, errors.New("InvalidAction: not implemented")
}

func (f *fakeSQS) ListMessageMoveTasks(context.Context, *awssqs.ListMessageMoveTasksInput, ...func(*awssqs.Options)) (*awssqs.ListMessageMoveTasksOutput, error) {
	return nil, errors.New("InvalidAction: not implemented")
}
