// Moved to the client package (lds-catalogue-client/mpp, client/mpp.ts); kept so existing imports (tests, benchmarks) keep working.
export { payTopup, type TopupClientOptions } from 'lds-catalogue-client/mpp';
