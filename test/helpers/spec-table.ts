// Spec 2.7 transcribed as data: the table the catalogue must match exactly. Kept by hand from
// ../shared/spec/service-spec.md so the test does not read the product definitions it checks.
export type Status = 'CC' | 'held';
export interface SpecProduct { id: string; title: string; tag: string; sources: [string, string | null, Status][] }

export const SPEC_2_7: SpecProduct[] = [
  { id: 'svc-agriculture-eu', title: 'Acquis Agriculture', tag: 'CAEDS', sources: [['eu.eurlex', 'P', 'CC'], ['eu.eurostat', 'P', 'CC'], ['eu.efsa', 'R', 'CC']] },
  { id: 'svc-cultural-heritage-eu', title: 'Acquis Cultural Heritage', tag: 'Cultural Heritage DS', sources: [['eu.eurlex', 'P', 'CC'], ['global.europeana', 'R', 'held']] },
  { id: 'svc-energy-eu', title: 'Acquis Energy', tag: 'CEEDS', sources: [['eu.eurlex', 'P', 'CC'], ['eu.entsoe', 'P', 'held'], ['eu.entsog', 'P', 'held'], ['fi.fingrid', 'R', 'held'], ['eu.entec', null, 'held']] },
  { id: 'svc-finance-eu', title: 'Acquis Finance', tag: 'Financial DS', sources: [['eu.eurlex', 'P', 'CC'], ['eu.ecb', 'P', 'held'], ['eu.esma_firds', 'P', 'held'], ['eu.esma_fitrs', 'P', 'held'], ['global.eba', 'P', 'held']] },
  { id: 'svc-green-deal-eu', title: 'Acquis Green Deal', tag: 'GDDS', sources: [['eu.eurlex', 'P', 'CC'], ['global.copernicus', 'R', 'CC'], ['global.eea', 'R', 'CC']] },
  { id: 'svc-health-eu', title: 'Acquis Health', tag: 'EHDS', sources: [['eu.eurlex', 'P', 'CC'], ['global.ecdc', 'R', 'CC'], ['global.ema', 'R', 'held'], ['eu.ema', 'P', 'held'], ['eu.pubmed', null, 'held']] },
  { id: 'svc-language-eu', title: 'Acquis Language', tag: 'LDS', sources: [['eu.eurlex', 'P', 'CC'], ['eu.iate', 'P', 'CC'], ['eu.aligned_paragraphs', 'R', 'CC'], ['fi.finlex', 'A', 'CC'], ['eu.eurovoc_taxonomy', null, 'CC']] },
  { id: 'svc-manufacturing-eu', title: 'Acquis Manufacturing', tag: 'CMDS', sources: [['eu.eurlex', 'P', 'CC'], ['global.cen_cenelec', 'P', 'held']] },
  { id: 'svc-media-eu', title: 'Acquis Media', tag: 'Media DS', sources: [['eu.eurlex', 'P', 'CC'], ['global.berec', 'P', 'held']] },
  { id: 'svc-mobility-eu', title: 'Acquis Mobility', tag: 'MDS', sources: [['eu.eurlex', 'P', 'CC'], ['eu.eurostat', 'P', 'CC'], ['fi.traficom', 'P', 'held'], ['global.era', 'P', 'held'], ['global.easa', 'P', 'held']] },
  { id: 'svc-public-admin-eu', title: 'Acquis Public Administration', tag: 'Public Administration DS', sources: [['eu.eurlex', 'P', 'CC'], ['eu.eurostat', 'P', 'CC'], ['global.eu_open_data', 'R', 'held'], ['fi.finlex', 'A', 'CC'], ['fi.traficom', 'P', 'held']] },
  { id: 'svc-research-eu', title: 'Acquis Research', tag: 'EOSC', sources: [['eu.eurlex', 'P', 'CC'], ['eu.cordis', 'P', 'held'], ['global.openaire', 'R', 'CC']] },
  { id: 'svc-skills-eu', title: 'Acquis Skills', tag: 'Skills DS', sources: [['eu.eurlex', 'P', 'CC'], ['global.esco', 'R', 'CC'], ['fi.finlex', 'A', 'CC'], ['global.europass', null, 'held'], ['global.cedefop', null, 'held']] },
  { id: 'svc-tourism-eu', title: 'Acquis Tourism', tag: 'European Tourism DS', sources: [['eu.eurlex', 'P', 'CC'], ['eu.eurostat', 'P', 'CC'], ['global.dg_grow_tourism', 'P', 'held']] },
];

/** Spec 2.9 skill order, by slug. */
export const SPEC_2_9_ORDER = ['agriculture', 'cultural-heritage', 'energy', 'green-deal', 'finance', 'health', 'language', 'manufacturing', 'media', 'mobility', 'public-admin', 'research', 'skills', 'tourism'];
