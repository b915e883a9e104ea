/**
 * nmdc_automation (NMDC workflow automation), nmdc_automation/api/nmdcapi.py
 * `NmdcRuntimeApi.post_workflow_executions`, as workflow_automation/watch_nmdc.py
 * (`RuntimeApiHandler.post_objects`, with the Database a finished job produces) and
 * run_process/run_import.py (after `validate_metadata`) call it: `requests.post(url,
 * headers=self.header, data=json.dumps(obj_data))` with the site client's token, then
 * `raise_for_status` and `resp.json()`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CompatServer } from './support/server.ts';
import { send, type WireResponse } from './support/wire.ts';
import { jsonDumps } from './support/python.ts';
import { DG_MAIN, DG_MAIN_READS } from './support/nmdc-automation-records.ts';
import { authedHeaders, startAutomationServer } from './support/nmdc-automation-client.ts';

let server: CompatServer;
let siteToken: string;

beforeAll(async () => {
  ({ server, siteToken } = await startAutomationServer());
});
afterAll(async () => server?.close());

/** `NmdcRuntimeApi.post_workflow_executions(obj_data)`: the request exactly as the client prepares it. */
const postWorkflowExecutions = (objData: unknown): Promise<WireResponse> =>
  send(server.url, {
    method: 'POST',
    target: '/workflows/workflow_executions',
    headers: authedHeaders(siteToken),
    body: jsonDumps(objData),
  });

/**
 * `WorkflowJob.make_data_objects` for one output file: the DataObject fields it sets, as
 * `yaml.safe_load(yaml_dumper.dumps(database))` gives them back.
 */
function dataObject(id: string, wfeId: string, fileName: string, dataObjectType: string) {
  return {
    id,
    name: fileName,
    description: `Reads QC summary for ${wfeId}`,
    file_size_bytes: 20742,
    md5_checksum: 'b2fcdc0d1e8e8b4b5c4ffe3fd2d36d32',
    data_object_type: dataObjectType,
    url: `https://data.microbiomedata.org/data/${DG_MAIN}/${wfeId}/${fileName}`,
    type: 'nmdc:DataObject',
    data_category: 'processed_data',
    was_generated_by: wfeId,
  };
}

/** `WorkflowJob.make_workflow_execution`: `as_workflow_execution_dict` plus `has_output`. */
function readQcExecution(wfeId: string, outputs: string[]) {
  return {
    id: wfeId,
    type: 'nmdc:ReadQcAnalysis',
    name: `Read QC for ${DG_MAIN}`,
    git_url: 'https://github.com/microbiomedata/metaG',
    execution_resource: 'NERSC-Perlmutter',
    processing_institution: 'NMDC',
    was_informed_by: [DG_MAIN],
    has_input: [DG_MAIN_READS],
    started_at_time: '2025-03-04T18:22:31.120944+00:00',
    ended_at_time: '2025-03-04T19:47:02.861201+00:00',
    version: 'v1.0.14',
    has_output: outputs,
  };
}

describe('nmdc_automation/api/nmdcapi.py NmdcRuntimeApi.post_workflow_executions', () => {
  it('watch_nmdc.py RuntimeApiHandler.post_objects: a finished job\'s Database is written and answered {"message": "jobs accepted"}', async () => {
    const wfeId = 'nmdc:wfrqc-11-cmpwf001.1';
    const outputs = [
      dataObject(
        'nmdc:dobj-11-cmpwf011',
        wfeId,
        'nmdc_wfrqc-11-cmpwf001.1_filtered.fastq.gz',
        'Filtered Sequencing Reads',
      ),
      dataObject('nmdc:dobj-11-cmpwf012', wfeId, 'nmdc_wfrqc-11-cmpwf001.1_filterStats.txt', 'QC Statistics'),
    ];
    const execution = readQcExecution(
      wfeId,
      outputs.map((o) => o.id),
    );
    const jobDict = { data_object_set: outputs, workflow_execution_set: [execution] };

    const res = await postWorkflowExecutions(jobDict);
    expect(res.status, res.text).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json).toEqual({ message: 'jobs accepted' });
    expect(await server.store.getById('workflow_execution_set', wfeId)).toEqual(execution);
    for (const output of outputs)
      expect(await server.store.getById('data_object_set', output.id)).toEqual(output);

    // The watcher posts again after a restart from its checkpoint: replaced by id, still one record each.
    const again = await postWorkflowExecutions(jobDict);
    expect(again.status, again.text).toBe(200);
    expect(await server.store.count('workflow_execution_set', { id: wfeId })).toBe(1);
  });

  it('run_import.py: validate_metadata passes, then post_workflow_executions of data objects alone (an empty workflow_execution_set removed)', async () => {
    const importDb = {
      data_object_set: [
        {
          id: 'nmdc:dobj-11-cmpimp01',
          name: 'imported_contigs.fna',
          description: `Assembled contigs for ${DG_MAIN}`,
          file_size_bytes: 1048576,
          md5_checksum: '0f343b0931126a20f133d67c2b018a3b',
          data_object_type: 'Assembly Contigs',
          url: `https://data.microbiomedata.org/data/${DG_MAIN}/imported_contigs.fna`,
          type: 'nmdc:DataObject',
          data_category: 'processed_data',
        },
      ],
    };
    const validated = await send(server.url, {
      method: 'POST',
      target: '/metadata/json:validate',
      headers: authedHeaders(siteToken),
      body: jsonDumps(importDb),
    });
    expect(validated.json).toEqual({ result: 'All Okay!' });
    const res = await postWorkflowExecutions(importDb);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ message: 'jobs accepted' });
    expect(await server.store.getById('data_object_set', 'nmdc:dobj-11-cmpimp01')).toEqual(
      importDb.data_object_set[0],
    );
  });

  it('a Database naming outputs it does not carry: 422 with the validation answer (raise_for_status raises; 422 is not retried), nothing written', async () => {
    const wfeId = 'nmdc:wfrqc-11-cmpwf002.1';
    const execution = readQcExecution(wfeId, ['nmdc:dobj-11-cmpwf021']);
    const res = await postWorkflowExecutions({ workflow_execution_set: [execution] });
    expect(res.status).toBe(422);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json.detail).toContain("'workflow_execution_set': [\"Document 'nmdc:wfrqc-11-cmpwf002.1'");
    expect(res.json.validation.result).toBe('errors');
    expect(res.json.validation.detail.workflow_execution_set).toEqual([
      expect.stringContaining("references a document having id 'nmdc:dobj-11-cmpwf021'"),
    ]);
    expect(await server.store.getById('workflow_execution_set', wfeId)).toBeNull();
  });
});
