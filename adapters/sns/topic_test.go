package sns_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/payments-outbox/payments-outbox/adapters/awstest"
	"github.com/payments-outbox/payments-outbox/adapters/sns"
)

// TestCheckTopic against a real endpoint: a topic that exists passes, one that
// does not is ErrTopicNotFound naming its ARN, and an endpoint that does not
// answer is an error that is not ErrTopicNotFound (nothing is known).
func TestCheckTopic(t *testing.T) {
	t.Parallel()
	tq := awstest.NewTopicQueue(t, awstest.QueueConfig{})
	client := awssns.NewFromConfig(tq.Config)
	ctx := context.Background()

	if err := sns.CheckTopic(ctx, client, tq.TopicARN); err != nil {
		t.Errorf("existing topic: %v", err)
	}
	missing := tq.TopicARN + "-missing"
	err := sns.CheckTopic(ctx, client, missing)
	if !errors.Is(err, sns.ErrTopicNotFound) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing topic: err = %v, want ErrTopicNotFound naming %s", err, missing)
	}

	down := awssns.NewFromConfig(tq.Config, func(o *awssns.Options) { o.BaseEndpoint = aws.String("http://127.0.0.1:1") })
	err = sns.CheckTopic(ctx, down, tq.TopicARN)
	if err == nil || errors.Is(err, sns.ErrTopicNotFound) {
		t.Errorf("unreachable endpoint: err = %v, want an error other than ErrTopicNotFound", err)
	}
}

// snsError is an SNS error answer (query protocol).
func snsError(code string) string {
	return `<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type><Code>` +
		code + `</Code><Message>stand-in</Message></Error><RequestId>r-1</RequestId></ErrorResponse>`
}

// TestTopicWatchReportsTheLastAnswer: Status follows the last check in words
// safe for /readyz, and only a change of answer is logged. A stand-in server
// answers in turn: the topic exists, SNS throttles, the topic is gone, it is
// back; a closed port is unreachable.
func TestTopicWatchReportsTheLastAnswer(t *testing.T) {
	t.Parallel()
	var answer atomic.Value
	answer.Store("")
	calls := atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "GetTopicAttributes" {
			http.Error(w, "want GetTopicAttributes", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/xml")
		switch code := answer.Load().(string); code {
		case "":
			_, _ = w.Write([]byte(`<GetTopicAttributesResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/">` +
				`<GetTopicAttributesResult><Attributes/></GetTopicAttributesResult>` +
				`<ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></GetTopicAttributesResponse>`))
		default:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(snsError(code)))
		}
	}))
	defer srv.Close()
	client := awssns.New(awssns.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: aws.AnonymousCredentials{}})
	var logs bytes.Buffer
	w := sns.NewTopicWatch(client, "arn:aws:sns:us-east-1:000000000000:t", slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()

	if got := w.Status(); got != "not checked yet" {
		t.Errorf("before any check: Status = %q", got)
	}
	steps := []struct {
		answer, status string
		notFound       bool
	}{
		{"", "ok", false},
		{"", "ok", false},
		{"Throttling", "error: Throttling", false},
		{"NotFound", "not found", true},
		{"InvalidParameter", "not found", true},
		{"", "ok", false},
	}
	for i, s := range steps {
		answer.Store(s.answer)
		before := calls.Load()
		err := w.Check(ctx)
		if got := w.Status(); got != s.status {
			t.Errorf("step %d (%q): Status = %q, want %q", i, s.answer, got, s.status)
		}
		if (err == nil) != (s.answer == "") || errors.Is(err, sns.ErrTopicNotFound) != s.notFound {
			t.Errorf("step %d (%q): err = %v", i, s.answer, err)
		}
		if n := calls.Load() - before; n != 1 {
			t.Errorf("step %d (%q): %d calls, want 1 (a check does not retry)", i, s.answer, n)
		}
	}
	// ok, throttled, not found, ok: the repeated answers are not logged again.
	if n := strings.Count(logs.String(), "SNS topic check"); n != 4 {
		t.Errorf("logged %d changes, want 4:\n%s", n, logs.String())
	}

	closed := awssns.New(awssns.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"), Credentials: aws.AnonymousCredentials{}})
	down := sns.NewTopicWatch(closed, "arn:aws:sns:us-east-1:000000000000:t", slog.New(slog.NewTextHandler(&logs, nil)))
	if err := down.Check(ctx); err == nil || down.Status() != "unreachable" {
		t.Errorf("closed port: err = %v, Status = %q, want an error and unreachable", err, down.Status())
	}
}

func TestTopicName(t *testing.T) {
	for arn, want := range map[string]string{
		"arn:aws:sns:us-east-1:000000000000:payments-events":      "payments-events",
		"arn:aws:sns:us-east-1:000000000000:payments-events.fifo": "payments-events.fifo",
	} {
		if got := sns.TopicName(arn); got != want {
			t.Errorf("TopicName(%q) = %q, want %q", arn, got, want)
		}
	}
}
