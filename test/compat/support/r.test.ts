/**
 * The R encoder against URLs the NMDC notebooks' R helpers really build: `paste0` of the pieces,
 * then `utils::URLencode(url, repeated = TRUE)`. If these drift, every R compat test drifts.
 */
import { describe, expect, it } from 'vitest';
import { NMDC_API, targetOf, urlEncode } from './r.ts';

describe('utils::URLencode(URL, reserved = FALSE, repeated = TRUE)', () => {
  it.each([
    [
      'get_all_results, a later page of the FT-ICR MS data objects (nom_r.ipynb)',
      `${NMDC_API}/nmdcschema/data_object_set?&filter={"data_object_type": {"$regex": "Direct Infusion FT-ICR MS Analysis Results"}}&max_page_size=100&page_token=nmdc:sys0zr0fbt71&projection=id,name,url,was_generated_by,md5_checksum`,
      `${NMDC_API}/nmdcschema/data_object_set?&filter=%7B%22data_object_type%22:%20%7B%22$regex%22:%20%22Direct%20Infusion%20FT-ICR%20MS%20Analysis%20Results%22%7D%7D&max_page_size=100&page_token=nmdc:sys0zr0fbt71&projection=id,name,url,was_generated_by,md5_checksum`,
    ],
    [
      'get_results_by_id, workflow executions by has_output (nom_r.ipynb)',
      `${NMDC_API}/nmdcschema/workflow_execution_set?&filter={"has_output": {"$in": ["nmdc:dobj-11-003x7710", "nmdc:dobj-11-00dewm52", "nmdc:dobj-11-00wm3313"]}}&max_page_size=20&projection=id,has_input,has_output`,
      `${NMDC_API}/nmdcschema/workflow_execution_set?&filter=%7B%22has_output%22:%20%7B%22$in%22:%20[%22nmdc:dobj-11-003x7710%22,%20%22nmdc:dobj-11-00dewm52%22,%20%22nmdc:dobj-11-00wm3313%22]%7D%7D&max_page_size=20&projection=id,has_input,has_output`,
    ],
    [
      'get_results_by_id with a dotted projection (integration_r.ipynb)',
      `${NMDC_API}/nmdcschema/biosample_set?&filter={"id": {"$in": ["nmdc:bsm-13-0jw5n594", "nmdc:bsm-13-13145k83", "nmdc:bsm-13-1p0tct86"]}}&max_page_size=50&projection=id,samp_name,description,depth.has_numeric_value,lat_lon`,
      `${NMDC_API}/nmdcschema/biosample_set?&filter=%7B%22id%22:%20%7B%22$in%22:%20[%22nmdc:bsm-13-0jw5n594%22,%20%22nmdc:bsm-13-13145k83%22,%20%22nmdc:bsm-13-1p0tct86%22]%7D%7D&max_page_size=50&projection=id,samp_name,description,depth.has_numeric_value,lat_lon`,
    ],
    [
      'get_results_by_id with an empty projection (aggregation_r.ipynb)',
      `${NMDC_API}/nmdcschema/manifest_set?&filter={"id": {"$in": ["nmdc:manif-11-7796sg87"]}}&max_page_size=50&projection=`,
      `${NMDC_API}/nmdcschema/manifest_set?&filter=%7B%22id%22:%20%7B%22$in%22:%20[%22nmdc:manif-11-7796sg87%22]%7D%7D&max_page_size=50&projection=`,
    ],
    [
      'get_all_results with $exists and a dotted $regex (taxonomic_r.ipynb)',
      `${NMDC_API}/nmdcschema/biosample_set?&filter={"soil_horizon":{"$exists": true}, "geo_loc_name.has_raw_value": {"$regex": "Colorado"}}&max_page_size=100&projection=id,soil_horizon,geo_loc_name`,
      `${NMDC_API}/nmdcschema/biosample_set?&filter=%7B%22soil_horizon%22:%7B%22$exists%22:%20true%7D,%20%22geo_loc_name.has_raw_value%22:%20%7B%22$regex%22:%20%22Colorado%22%7D%7D&max_page_size=100&projection=id,soil_horizon,geo_loc_name`,
    ],
    [
      'get_collection_by_id (nom_r.ipynb)',
      `${NMDC_API}/nmdcschema/ids/nmdc:wfnom-11-dv3wck24.1/collection-name`,
      `${NMDC_API}/nmdcschema/ids/nmdc:wfnom-11-dv3wck24.1/collection-name`,
    ],
  ])('encodes the URL of %s as R does', (_call, pasted, onTheWire) => {
    expect(urlEncode(pasted)).toBe(onTheWire);
  });

  it('keeps the reserved set raw and encodes everything else per UTF-8 byte in upper-case hex', () => {
    expect(urlEncode("][!$&'()*+,;=:/?@#AZaz09._~-")).toBe("][!$&'()*+,;=:/?@#AZaz09._~-");
    expect(urlEncode(' "{}|\\^`<>')).toBe('%20%22%7B%7D%7C%5C%5E%60%3C%3E');
    expect(urlEncode('é→')).toBe('%C3%A9%E2%86%92');
  });

  it('encodes an existing escape again (repeated = TRUE)', () => {
    expect(urlEncode('name.search%3ANEON')).toBe('name.search%253ANEON');
  });

  it('gives the request target of an NMDC API URL', () => {
    expect(targetOf(`${NMDC_API}/biosamples/nmdc%3Absm-13-bgefg837`)).toBe(
      '/biosamples/nmdc%3Absm-13-bgefg837',
    );
    expect(() => targetOf('https://example.org/studies')).toThrow();
  });
});
