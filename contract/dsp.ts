// The Dataspace Protocol (2025-1) names both halves use: the build writes the version document and
// the catalog with this context, the service checks a CatalogRequestMessage and answers with it.
export const DSP_CONTEXT = 'https://w3id.org/dspace/2025/1/context.jsonld';
export const DSP_VERSION = '2025-1';
export const DSP_VERSION_PATH = '.well-known/dspace-version';
