export { generateAck, InviteClientTransaction } from "./invite-client-transaction.js";
export { InviteServerTransaction, trying100 } from "./invite-server-transaction.js";
export { NonInviteClientTransaction } from "./non-invite-client-transaction.js";
export { NonInviteServerTransaction } from "./non-invite-server-transaction.js";
export * from "./timers.js";
export {
  Transaction,
  type TransactionOptions,
  type TransactionTransport,
  type TransactionUser,
} from "./transaction.js";
export { clientTransactionKey, MAGIC_COOKIE, serverTransactionKey } from "./transaction-key.js";
export { IllegalTransitionError, TransactionState } from "./transaction-state.js";
