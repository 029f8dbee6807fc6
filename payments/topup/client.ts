// Moved to client/mpp.ts (the buyer's client library); kept so existing imports keep working.
export { payTopup, type TopupClientOptions } from '../../client/mpp.ts';
