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
# Each queue's access policy lets the topic deliver to it and denies every
# other sender but one: the operator's role that redrives the DLQ
# (REDRIVE_ROLE_ARN, default arn:aws:iam::<the queue's account>:role/payments-outbox-redrive).
# It is the first of two layers: a consumer acts only on events the payments
# service signed as well (docs/SECURITY.md, "Events nobody forged"). LocalStack
# and moto store the policy without enforcing it; tools/stack evaluates what
# this script writes.
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

# queue_policy QUEUE_ARN prints the queue's access policy, the document of
# deploy/kubernetes/overlays/aws/iam/<queue>-policy.json with this
# environment's ARNs. Two statements:
#   - the topic may send (sqs:SendMessage with aws:SourceArn the topic's ARN);
#   - everyone else is denied sqs:SendMessage (SendMessageBatch is authorised
#     as it) unless the request comes from the topic or from the redrive role.
#     Both keys sit under one ArnNotEquals, so both must differ for the deny
#     to apply; a key the request lacks counts as differing (a negated
#     operator on a missing key is true), so a principal's direct send, which
#     has no aws:SourceArn, is denied unless it is the redrive role's.
# The redrive role is excepted because `ledger dlq redrive` and `webhooks dlq
# redrive` put the DLQ's messages back on the queue with its permissions
# (StartMessageMoveTask sends them as the role that started it; the
# fallback copy calls SendMessage), and an explicit deny would beat the
# role's own allow. The DLQs have no such policy: SQS moves messages into
# them itself, and a consumer moves there a message that fails verification.
queue_policy() {
	local queue_arn=$1 partition account redrive_role
	# arn:<partition>:sqs:<region>:<account>:<name>
	IFS=: read -r _ partition _ _ account _ <<<"$queue_arn"
	redrive_role="${REDRIVE_ROLE_ARN:-arn:$partition:iam::$account:role/payments-outbox-redrive}"
	printf '{"Version":"2012-10-17","Statement":[%s,%s]}' \
		"$(printf '{"Sid":"TheTopicDelivers","Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"%s","Condition":{"ArnEquals":{"aws:SourceArn":"%s"}}}' "$queue_arn" "$topic_arn")" \
		"$(printf '{"Sid":"NoOtherSender","Effect":"Deny","Principal":"*","Action":"sqs:SendMessage","Resource":"%s","Condition":{"ArnNotEquals":{"aws:SourceArn":"%s","aws:PrincipalArn":"%s"}}}' "$queue_arn" "$topic_arn" "$redrive_role")"
}

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
	# The topic may send to the queue, and no one else but the redrive role
	# (queue_policy); escaped as a JSON string inside the attributes.
	policy=$(queue_policy "$queue_arn")
	policy=${policy//\"/\\\"}
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
