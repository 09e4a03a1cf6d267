package sqs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// RedriveReport says what a redrive did.
type RedriveReport struct {
	// Mode is "move-task" when SQS moved the messages itself
	// (StartMessageMoveTask), "copy" when they were received, sent and deleted
	// one batch at a time.
	Mode       string
	Moved      int64 // messages now back on the source queue
	SendFailed int64 // messages left in the DLQ because their send failed
}

// Redrive moves every message of the DLQ back to the queue it came from.
//
// It asks SQS to do it (StartMessageMoveTask, then waits for the task to
// finish). Endpoints without that API (moto, older emulators) fall back to
// receive → send → delete, where a message is deleted from the DLQ only
// after its send succeeded: a crash in between duplicates it on the queue,
// where the inbox absorbs it, and never loses it.
func Redrive(ctx context.Context, api API, dlqURL, queueURL string, log *slog.Logger) (RedriveReport, error) {
	dlq, err := ReadQueueAttributes(ctx, api, dlqURL)
	if err != nil {
		return RedriveReport{}, err
	}
	queue, err := ReadQueueAttributes(ctx, api, queueURL)
	if err != nil {
		return RedriveReport{}, err
	}
	task, err := api.StartMessageMoveTask(ctx, &awssqs.StartMessageMoveTaskInput{
		SourceArn: aws.String(dlq.ARN), DestinationArn: aws.String(queue.ARN),
	})
	if err == nil {
		log.InfoContext(ctx, "message move task started", "task", aws.ToString(task.TaskHandle))
		return waitMoveTask(ctx, api, dlq.ARN, aws.ToString(task.TaskHandle))
	}
	if ctx.Err() != nil {
		return RedriveReport{}, ctx.Err()
	}
	log.InfoContext(ctx, "StartMessageMoveTask unavailable; copying messages instead", "err", err)
	return copyMessages(ctx, api, dlqURL, queueURL)
}

func waitMoveTask(ctx context.Context, api API, sourceARN, handle string) (RedriveReport, error) {
	for {
		out, err := api.ListMessageMoveTasks(ctx, &awssqs.ListMessageMoveTasksInput{SourceArn: aws.String(sourceARN)})
		if err != nil {
			return RedriveReport{Mode: "move-task"}, fmt.Errorf("list message move tasks: %w", err)
		}
		for _, t := range out.Results {
			if aws.ToString(t.TaskHandle) != handle {
				continue
			}
			rep := RedriveReport{Mode: "move-task", Moved: t.ApproximateNumberOfMessagesMoved}
			switch aws.ToString(t.Status) {
			case "COMPLETED":
				return rep, nil
			case "FAILED", "CANCELLED":
				return rep, fmt.Errorf("message move task %s: %s %s", handle, aws.ToString(t.Status), aws.ToString(t.FailureReason))
			}
		}
		select {
		case <-ctx.Done():
			return RedriveReport{Mode: "move-task"}, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// copyMessages drains the DLQ into the queue, 10 messages at a time, until a
// receive comes back empty.
//
// To a FIFO queue each message goes back in its own message group, so the
// order per payment holds, and with a deduplication id of its own: its
// original one would make SQS drop the copy as a duplicate of the first send
// if that was less than five minutes ago, and the DLQ's copy would then be
// deleted with nothing delivered. The DLQ message's id is stable across
// receives, so a copy sent twice by a redrive that stopped between send and
// delete is still deduplicated.
func copyMessages(ctx context.Context, api API, dlqURL, queueURL string) (RedriveReport, error) {
	rep := RedriveReport{Mode: "copy"}
	fifo := strings.HasSuffix(queueURL, ".fifo")
	for {
		out, err := api.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(dlqURL),
			MaxNumberOfMessages:         10,
			WaitTimeSeconds:             1,
			VisibilityTimeout:           60,
			MessageAttributeNames:       []string{"All"},
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId},
		})
		if err != nil {
			return rep, fmt.Errorf("receive from dlq: %w", err)
		}
		if len(out.Messages) == 0 {
			return rep, nil
		}
		send := make([]types.SendMessageBatchRequestEntry, len(out.Messages))
		for i, m := range out.Messages {
			send[i] = types.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), MessageBody: m.Body, MessageAttributes: m.MessageAttributes,
			}
			if fifo {
				group, ok := m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)]
				if !ok {
					// A message from a standard DLQ has no group: one
					// group keeps at least the order the DLQ gave.
					group = "redrive"
				}
				send[i].MessageGroupId = aws.String(group)
				send[i].MessageDeduplicationId = aws.String("redrive-" + aws.ToString(m.MessageId))
			}
		}
		sent, err := api.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(queueURL), Entries: send})
		if err != nil {
			// Nothing was deleted: the messages reappear in the DLQ.
			return rep, fmt.Errorf("send to queue: %w", err)
		}
		rep.SendFailed += int64(len(sent.Failed))
		var del []types.DeleteMessageBatchRequestEntry
		for _, s := range sent.Successful {
			i, err := strconv.Atoi(aws.ToString(s.Id))
			if err != nil || i < 0 || i >= len(out.Messages) {
				continue
			}
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: s.Id, ReceiptHandle: out.Messages[i].ReceiptHandle})
		}
		if len(del) == 0 {
			return rep, errors.New("no message of the batch could be sent; stopping")
		}
		deleted, err := api.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(dlqURL), Entries: del})
		if err != nil {
			// Sent but not deleted: they will be redriven again, and the
			// inbox absorbs the copies.
			return rep, fmt.Errorf("delete from dlq after send: %w", err)
		}
		rep.Moved += int64(len(deleted.Successful))
	}
}
