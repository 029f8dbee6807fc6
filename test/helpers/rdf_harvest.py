#!/usr/bin/python3
# What a DCAT-AP harvester takes from the whole catalogue, read by Debian's rdflib (python3-rdflib),
# a library no one here wrote. Usage: rdf_harvest.py <file.jsonld> <file.ttl> <file.rdf> <out.nt>
#
# 1. Parses the three serialisations and says whether they are one graph (rdflib.compare.isomorphic).
# 2. Writes the RDF/XML graph as N-Triples to <out.nt> (the Node test runs SHACL on it: that file is
#    rdflib's reading of the RDF/XML, not the build's).
# 3. Asks, with SPARQL, for the properties ckanext-dcat's DCAT-AP profiles map (ckan/ckanext-dcat
#    ckanext/dcat/profiles/euro_dcat_ap_base.py _parse_dataset_base and graph_from_catalog; pinned in
#    test/conformance-dcat-catalogue.test.ts): per catalogue title, description, homepage, language,
#    modified, publisher; per dataset title (title), description (notes), dcat:keyword (tags),
#    dcat:theme (theme), dct:identifier, dct:modified, dct:language, dct:spatial, dct:accessRights,
#    dct:publisher with foaf:name (publisher_name), dcat:contactPoint with vcard:fn and vcard:hasEmail
#    (contact_name, contact_email), the licence from the distributions' dct:license (_license); per
#    distribution dct:title (name), dct:description, dcat:accessURL (access_url, url), dct:format and
#    dcat:mediaType (format, mimetype), dct:license, dct:rights, dcat:accessService.
# Prints one JSON object per file set.
import json
import sys

import rdflib
from rdflib.compare import isomorphic

jsonld_file, ttl_file, rdf_file, nt_out = sys.argv[1:5]
graphs = {
    'jsonld': rdflib.Graph().parse(jsonld_file, format='json-ld'),
    'turtle': rdflib.Graph().parse(ttl_file, format='turtle'),
    'rdfxml': rdflib.Graph().parse(rdf_file, format='xml'),
}
graphs['rdfxml'].serialize(destination=nt_out, format='nt', encoding='utf-8')

PREFIXES = """
PREFIX dcat: <http://www.w3.org/ns/dcat#>
PREFIX dct: <http://purl.org/dc/terms/>
PREFIX foaf: <http://xmlns.com/foaf/0.1/>
PREFIX vcard: <http://www.w3.org/2006/vcard/ns#>
"""


def rows(g, query):
    return [{str(k): (str(v) if v is not None else None) for k, v in r.asdict().items()} for r in g.query(PREFIXES + query)]


def values(g, subject, predicate):
    return sorted(r['o'] for r in rows(g, f'SELECT ?o WHERE {{ <{subject}> {predicate} ?o }}'))


def harvest(g):
    catalogues = []
    for c in rows(g, 'SELECT ?c WHERE { ?c a dcat:Catalog }'):
        cat = c['c']
        catalogues.append({
            'uri': cat,
            'title': values(g, cat, 'dct:title'),
            'description': values(g, cat, 'dct:description'),
            'homepage': values(g, cat, 'foaf:homepage'),
            'language': values(g, cat, 'dct:language'),
            'modified': values(g, cat, 'dct:modified'),
            'publisher': values(g, cat, 'dct:publisher'),
            'datasets': values(g, cat, 'dcat:dataset'),
        })
    datasets = []
    for d in rows(g, 'SELECT ?d WHERE { ?d a dcat:Dataset }'):
        ds = d['d']
        dists = []
        for dist in values(g, ds, 'dcat:distribution'):
            dists.append({
                'uri': dist,
                'name': values(g, dist, 'dct:title'),
                'description': values(g, dist, 'dct:description'),
                'access_url': values(g, dist, 'dcat:accessURL'),
                'format': values(g, dist, 'dct:format'),
                'mimetype': values(g, dist, 'dcat:mediaType'),
                'license': values(g, dist, 'dct:license'),
                'rights': values(g, dist, 'dct:rights'),
                'access_service': values(g, dist, 'dcat:accessService'),
            })
        datasets.append({
            'uri': ds,
            'title': values(g, ds, 'dct:title'),
            'notes': values(g, ds, 'dct:description'),
            'tags': values(g, ds, 'dcat:keyword'),
            'theme': values(g, ds, 'dcat:theme'),
            'identifier': values(g, ds, 'dct:identifier'),
            'modified': values(g, ds, 'dct:modified'),
            'language': values(g, ds, 'dct:language'),
            'spatial': values(g, ds, 'dct:spatial'),
            'access_rights': values(g, ds, 'dct:accessRights'),
            'publisher_name': [r['n'] for r in rows(g, f'SELECT ?n WHERE {{ <{ds}> dct:publisher ?p . ?p foaf:name ?n }}')],
            'contact_name': [r['n'] for r in rows(g, f'SELECT ?n WHERE {{ <{ds}> dcat:contactPoint ?c . ?c vcard:fn ?n }}')],
            'contact_email': [r['e'] for r in rows(g, f'SELECT ?e WHERE {{ <{ds}> dcat:contactPoint ?c . ?c vcard:hasEmail ?e }}')],
            'resources': dists,
        })
    return {'catalogues': catalogues, 'datasets': sorted(datasets, key=lambda x: x['uri'])}


print(json.dumps({
    'triples': {k: len(g) for k, g in graphs.items()},
    'isomorphic': {
        'jsonld_turtle': isomorphic(graphs['jsonld'], graphs['turtle']),
        'jsonld_rdfxml': isomorphic(graphs['jsonld'], graphs['rdfxml']),
    },
    'harvest': {k: harvest(g) for k, g in graphs.items()},
    'rdflib': rdflib.__version__,
}))
