#!/usr/bin/env bash
# Creates the AWS resources the services talk through: one topic, and a queue
# with its DLQ for each consumer of it.
#
#   SNS topic payments-events ──raw delivery──▶ SQS ledger-queue   ──10 receives──▶ SQS ledger-dlq
#                             └─raw delivery──▶ SQS webhooks-queue ──10 receives──▶ SQS webhooks-dlq
#
# One script for every environment:
#   - LocalStack runs it as a ready.d hook (/etc/localstack/init/ready.d), where
#     `awslocal` is on the PATH and AWS_ENDPOINT_URL is usually unset;
#   - .ci/run and developers run it against any endpoint (moto_server, LocalStack on
#     the host) by setting AWS_ENDPOINT_URL, which wins over awslocal.
#
# It is idempotent: every step either creates the resource or finds it and re-applies
# the same attributes, so running it twice changes nothing.
#
# With --print-env it prints only `export NAME=value` lines on stdout, for eval:
#   eval "$(bash localstack/init-aws.sh --print-env)"
# All progress and errors go to stderr.
#
# Resource names can be overridden (PAYMENTS_TOPIC_NAME, LEDGER_QUEUE_NAME,
# LEDGER_DLQ_NAME, WEBHOOKS_QUEUE_NAME, WEBHOOKS_DLQ_NAME) so shared dev
# endpoints can hold several copies side by side.
#
# PAYMENTS_FIFO=true creates FIFO resources instead (.fifo appended to each name
# that lacks it):
# an SNS FIFO topic and SQS FIFO queue and DLQ, so each payment's events reach
# each consumer in the order they were committed. The relay publishes to a FIFO
# topic in ordered mode with MessageGroupId = the payment id and
# MessageDeduplicationId = the event id (README, "Ordering"). The default,
# false, creates standard ones.
set -euo pipefail

print_env=false
case "${1:-}" in
--print-env) print_env=true ;;
"") ;;
*)
	echo "usage: $0 [--print-env]" >&2
	exit 2
	;;
esac

topic_name="${PAYMENTS_TOPIC_NAME:-payments-events}"
queue_name="${LEDGER_QUEUE_NAME:-ledger-queue}"
dlq_name="${LEDGER_DLQ_NAME:-ledger-dlq}"
webhooks_queue_name="${WEBHOOKS_QUEUE_NAME:-webhooks-queue}"
webhooks_dlq_name="${WEBHOOKS_DLQ_NAME:-webhooks-dlq}"
fifo="${PAYMENTS_FIFO:-false}"
case "$fifo" in
true)
	# SNS and SQS require FIFO names to end in .fifo.
	for var in topic_name queue_name dlq_name webhooks_queue_name webhooks_dlq_name; do
		if [ "${!var%.fifo}" = "${!var}" ]; then printf -v "$var" '%s.fifo' "${!var}"; fi
	done
	;;
false) ;;
*)
	echo "init-aws: PAYMENTS_FIFO=$fifo: want true or false" >&2
	exit 2
	;;
esac
# After this many receives without a delete a message moves to the DLQ instead of
# looping. It is a budget (README, "The receive budget"): 1 for the delivery that
# applies the message, 2 for crashes in a row (a killed ledger's open long polls and
# batches each cost a receive; a graceful stop costs none), and 7 failed attempts,
# one per visibility timeout: three and a half minutes of database outage. A poison
# message is made visible again after each failure, so it still reaches the DLQ in
# seconds. adapters/awstest holds the same number; a test fails if they differ.
# The webhooks service's queue gets the same budget, visibility and retention:
# it consumes through the same inbox, with the same long-poll wait and
# INBOX_RETENTION, so the same arithmetic holds.
max_receive_count="${LEDGER_MAX_RECEIVE_COUNT:-10}"
# Seconds a received message stays invisible to other workers while one handles it.
# Longer than the ledger's long-poll wait (LEDGER_WAIT_TIME, 10s), so that a killed
# ledger's open polls can take a message at most once.
visibility_timeout="${LEDGER_VISIBILITY_TIMEOUT:-30}"
# 4 days, set explicitly: the ledger's inbox retention (INBOX_RETENTION) must outlive
# it, or a redelivered message could arrive after its inbox row was cleaned up.
retention_seconds="${LEDGER_RETENTION_SECONDS:-345600}"
# The DLQ keeps its messages for the maximum (14 days) so an operator has time.
dlq_retention_seconds=1209600

export AWS_REGION="${AWS_REGION:-${AWS_DEFAULT_REGION:-us-east-1}}"
export AWS_DEFAULT_REGION="$AWS_REGION"

if [ -n "${AWS_ENDPOINT_URL:-}" ]; then
	# A local endpoint needs some credentials to sign with; any will do.
	export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}" AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
	awscli() { aws --endpoint-url "$AWS_ENDPOINT_URL" --output text "$@"; }
elif command -v awslocal >/dev/null 2>&1; then
	awscli() { awslocal --output text "$@"; }
else
	echo "init-aws: AWS_ENDPOINT_URL is unset and awslocal is not installed; refusing to guess an endpoint" >&2
	exit 1
fi

log() { echo "init-aws: $*" >&2; }

# FIFO is chosen at creation and cannot be changed after. Deduplication is by
# the MessageDeduplicationId the relay sets (the event id), not by content.
topic_attrs=() queue_attrs=()
if [ "$fifo" = true ]; then
	topic_attrs=(--attributes FifoTopic=true,ContentBasedDeduplication=false)
	queue_attrs=(--attributes FifoQueue=true,ContentBasedDeduplication=false)
fi

topic_arn=$(awscli sns create-topic --name "$topic_name" "${topic_attrs[@]}" --query TopicArn)
log "topic $topic_arn"

# consumer_queue NAME DLQ_NAME creates a consumer's DLQ and queue, subscribes
# the queue to the topic with raw delivery, and sets consumer_queue_url and
# consumer_dlq_url.
consumer_queue() {
	local name=$1 dlq=$2 dlq_url dlq_arn queue_url queue_arn policy redrive sub_arn
	dlq_url=$(awscli sqs create-queue --queue-name "$dlq" "${queue_attrs[@]}" --query QueueUrl)
	awscli sqs set-queue-attributes --queue-url "$dlq_url" \
		--attributes "{\"MessageRetentionPeriod\":\"$dlq_retention_seconds\"}" >&2
	dlq_arn=$(awscli sqs get-queue-attributes --queue-url "$dlq_url" --attribute-names QueueArn --query Attributes.QueueArn)
	log "dlq $dlq_url"

	# create-queue without attributes, then set them: create-queue fails when an existing
	# queue's attributes differ, set-queue-attributes converges instead.
	queue_url=$(awscli sqs create-queue --queue-name "$name" "${queue_attrs[@]}" --query QueueUrl)
	queue_arn=$(awscli sqs get-queue-attributes --queue-url "$queue_url" --attribute-names QueueArn --query Attributes.QueueArn)
	# Only the topic may send to the queue.
	policy="{\\\"Version\\\":\\\"2012-10-17\\\",\\\"Statement\\\":[{\\\"Sid\\\":\\\"topic-to-queue\\\",\\\"Effect\\\":\\\"Allow\\\",\\\"Principal\\\":{\\\"Service\\\":\\\"sns.amazonaws.com\\\"},\\\"Action\\\":\\\"sqs:SendMessage\\\",\\\"Resource\\\":\\\"$queue_arn\\\",\\\"Condition\\\":{\\\"ArnEquals\\\":{\\\"aws:SourceArn\\\":\\\"$topic_arn\\\"}}}]}"
	redrive="{\\\"deadLetterTargetArn\\\":\\\"$dlq_arn\\\",\\\"maxReceiveCount\\\":\\\"$max_receive_count\\\"}"
	awscli sqs set-queue-attributes --queue-url "$queue_url" --attributes "{
		\"VisibilityTimeout\":\"$visibility_timeout\",
		\"MessageRetentionPeriod\":\"$retention_seconds\",
		\"RedrivePolicy\":\"$redrive\",
		\"Policy\":\"$policy\"
	}" >&2
	log "queue $queue_url (redrive to $dlq after $max_receive_count receives)"

	# Subscribe once: look for an existing subscription of this queue first.
	sub_arn=$(awscli sns list-subscriptions-by-topic --topic-arn "$topic_arn" \
		--query "Subscriptions[?Endpoint=='$queue_arn'].SubscriptionArn | [0]")
	if [ -z "$sub_arn" ] || [ "$sub_arn" = "None" ]; then
		sub_arn=$(awscli sns subscribe --topic-arn "$topic_arn" --protocol sqs \
			--notification-endpoint "$queue_arn" --attributes RawMessageDelivery=true \
			--query SubscriptionArn)
	fi
	# Raw delivery: the SQS body is exactly the published CloudEvents JSON, not an SNS envelope.
	awscli sns set-subscription-attributes --subscription-arn "$sub_arn" \
		--attribute-name RawMessageDelivery --attribute-value true >&2
	log "subscription $sub_arn (raw delivery)"

	consumer_queue_url=$queue_url consumer_dlq_url=$dlq_url
}

consumer_queue "$queue_name" "$dlq_name"
queue_url=$consumer_queue_url dlq_url=$consumer_dlq_url
consumer_queue "$webhooks_queue_name" "$webhooks_dlq_name"
webhooks_queue_url=$consumer_queue_url webhooks_dlq_url=$consumer_dlq_url

if $print_env; then
	printf 'export PAYMENTS_TOPIC_ARN=%q\n' "$topic_arn"
	printf 'export LEDGER_QUEUE_URL=%q\n' "$queue_url"
	printf 'export LEDGER_DLQ_URL=%q\n' "$dlq_url"
	printf 'export WEBHOOKS_QUEUE_URL=%q\n' "$webhooks_queue_url"
	printf 'export WEBHOOKS_DLQ_URL=%q\n' "$webhooks_dlq_url"
fi
