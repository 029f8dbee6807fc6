// Adapter 'eea-airbase': EEA AirBase v7 annual air-quality statistics, one record per statistic
// (station, pollutant, measurement group, period, year, averaging, statistic), joined to the
// station list (`stations`: id, name, operator, longitude, latitude) for the station's name and
// place. The column names are those of the AirBase v7 statistics export; a statistic for a station
// that is not in the station list is an error (its citation would have no station).
import { readCsv } from './csv.ts';
import { type BadRecordHandler, IngestError } from './errors.ts';
import { describe, type SourceRecord } from './records.ts';

export const AIRBASE_STATISTICS_COLUMNS = [
  'station_european_code', 'component_code', 'component_name', 'component_caption', 'measurement_unit', 'measurement_european_group_code',
  'statistics_period', 'statistics_year', 'statistics_average_group', 'statistic_shortname', 'statistic_name', 'statistic_value',
  'statistics_percentage_valid', 'statistics_number_valid', 'statistics_calculated',
] as const;
export const AIRBASE_STATION_COLUMNS = ['id', 'name', 'operator', 'longitude', 'latitude'] as const;

export interface Station {
  id: string;
  name: string;
  operator: string;
  longitude: string;
  latitude: string;
}

const STATION = /^[A-Z]{2}[A-Z0-9]{3,12}$/;
const NUMBER = /^-?[0-9]+(\.[0-9]+)?$/;

/** The station list (AirBase has a few thousand stations: small enough to keep in memory). */
export async function readStations(file: string, displayName: string, onBad: BadRecordHandler, delimiter?: string): Promise<Map<string, Station>> {
  const out = new Map<string, Station>();
  for await (const { line, record } of readCsv(file, displayName, onBad, { columns: AIRBASE_STATION_COLUMNS, delimiter })) {
    const reason = !STATION.test(record.id) ? `station id must be an EoI station code, got ${JSON.stringify(record.id)}`
      : out.has(record.id) ? `station ${record.id} is listed twice`
      : !NUMBER.test(record.longitude) || !NUMBER.test(record.latitude) ? `station ${record.id}: longitude and latitude must be numbers`
      : '';
    if (reason) {
      onBad(new IngestError(displayName, String(line), reason));
      continue;
    }
    out.set(record.id, { id: record.id, name: record.name, operator: record.operator, longitude: record.longitude, latitude: record.latitude });
  }
  return out;
}

export async function* readAirbaseStatistics(file: string, displayName: string, stations: Map<string, Station>, stationsFile: string, onBad: BadRecordHandler, delimiter?: string): AsyncGenerator<SourceRecord> {
  for await (const { line, record: r } of readCsv(file, displayName, onBad, { columns: AIRBASE_STATISTICS_COLUMNS, delimiter })) {
    const station = stations.get(r.station_european_code);
    const reason = !station ? `station ${JSON.stringify(r.station_european_code)} is not in ${stationsFile}`
      : !/^[0-9]{4}$/.test(r.statistics_year) ? `statistics_year must be a year, got ${JSON.stringify(r.statistics_year)}`
      : !/^[0-9]+$/.test(r.component_code) ? `component_code must be a number, got ${JSON.stringify(r.component_code)}`
      : r.statistic_shortname.trim() === '' ? 'statistic_shortname is empty'
      : !NUMBER.test(r.statistic_value) ? `statistic_value must be a number, got ${JSON.stringify(r.statistic_value)}`
      : '';
    if (reason || !station) {
      onBad(new IngestError(displayName, String(line), reason));
      continue;
    }
    const what = `${r.component_caption}, ${r.statistics_period} ${r.statistics_year}, ${r.statistic_name}`;
    yield {
      file: displayName,
      where: String(line),
      key: ['airbase', r.station_european_code, r.component_code, r.measurement_european_group_code, r.statistics_period, r.statistics_year, r.statistics_average_group, r.statistic_shortname],
      title: `${station.name} (${station.id}): ${what}`,
      label: `EEA AirBase v7 statistics, station ${station.id} (${station.name}), ${r.component_caption} (component ${r.component_code}, measurement group ${r.measurement_european_group_code}), ${r.statistics_period} ${r.statistics_year}, ${r.statistic_shortname} of ${r.statistics_average_group} values`,
      fields: { ...r, station_name: station.name, station_operator: station.operator, station_longitude: station.longitude, station_latitude: station.latitude },
      text: describe(station.name, station.id, station.operator, r.component_name, r.component_caption, r.measurement_unit, `${r.statistics_period} ${r.statistics_year}`, r.statistics_average_group, r.statistic_shortname, r.statistic_name, r.statistic_value),
      group: `${station.id}/${r.component_code}`,
    };
  }
}
