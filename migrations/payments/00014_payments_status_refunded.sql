-- +goose Up
-- A payment's status says how much of its capture was refunded, and its
-- amounts must say the same: nothing refunded before the first refund,
-- some but not all of the capture while it is partially_refunded, all of
-- it once it is refunded. Without it a row could be refunded with money
-- left, or created with money already refunded, and refunds would be
-- bounded by amounts its status contradicts. The domain's state machine
-- (domain/payment/lifecycle.go) is the rule; this CHECK is the last line
-- of defence behind it and the row lock, as the amounts' CHECKs are. (CHECKs
-- run in the order of their names: payments_refunded_captured_check, the
-- plainer rule, answers first for a refund past the capture.)
ALTER TABLE payments ADD CONSTRAINT payments_status_refunded_check CHECK (CASE status
    WHEN 'partially_refunded' THEN refunded_amount > 0 AND refunded_amount < amount_captured
    WHEN 'refunded' THEN refunded_amount > 0 AND refunded_amount = amount_captured
    ELSE refunded_amount = 0
    END);

-- +goose Down
ALTER TABLE payments DROP CONSTRAINT payments_status_refunded_check;
