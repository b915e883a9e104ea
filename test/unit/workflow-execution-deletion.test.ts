/**
 * The cascade of a workflow execution's deletion on the embedded store: breadth-first order, cycles
 * and shared consumers met once, outputs written as one id, and the cap on its size.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WorkflowExecutionDeletion } from '../../src/workflows/workflow-execution-deletion.ts';
import { Unprocessable } from '../../src/errors.ts';
import { createTestApp, type TestApp } from '../support/server.ts';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(async () => t?.close());

const run = (id: string, inputs: string[], outputs: string[] | string, type = 'nmdc:MetagenomeAssembly') => ({
  id,
  type,
  has_input: inputs,
  has_output: outputs,
});
const dataObject = (id: string) => ({ id, type: 'nmdc:DataObject', name: id });

describe('WorkflowExecutionDeletion', () => {
  it('walks breadth first, meets a cycle and a shared consumer once, and reads a single output id', async () => {
    // a -> x -> b -> y -> c; a -> z -> c (c consumes both); c -> w -> a (a cycle back).
    await t.writer.upsertAll([
      {
        collection: 'workflow_execution_set',
        docs: [
          run('nmdc:wfmgas-11-a.1', ['nmdc:dobj-11-w'], ['nmdc:dobj-11-x', 'nmdc:dobj-11-z']),
          run('nmdc:wfmgas-11-b.1', ['nmdc:dobj-11-x'], 'nmdc:dobj-11-y'),
          run('nmdc:wfmgas-11-c.1', ['nmdc:dobj-11-y', 'nmdc:dobj-11-z'], ['nmdc:dobj-11-w']),
          run('nmdc:wfmgas-11-other.1', ['nmdc:dobj-11-raw'], ['nmdc:dobj-11-other']),
        ],
      },
      {
        collection: 'data_object_set',
        docs: ['x', 'y', 'z', 'w', 'raw', 'other'].map((n) => dataObject(`nmdc:dobj-11-${n}`)),
      },
    ]);
    const deletion = new WorkflowExecutionDeletion(t.store, t.writer);
    const cascade = await deletion.cascadeOf('nmdc:wfmgas-11-a.1');
    expect(cascade).toEqual({
      deleted_workflow_execution_ids: ['nmdc:wfmgas-11-a.1', 'nmdc:wfmgas-11-b.1', 'nmdc:wfmgas-11-c.1'],
      deleted_data_object_ids: ['nmdc:dobj-11-x', 'nmdc:dobj-11-z', 'nmdc:dobj-11-y', 'nmdc:dobj-11-w'],
      deleted_functional_annotation_agg_oids: [],
      deleted_job_ids: [],
    });
    // Working it out deletes nothing; deleting answers the same.
    expect(await t.store.count('workflow_execution_set', {})).toBe(4);
    expect(await deletion.delete('nmdc:wfmgas-11-a.1')).toEqual(cascade);
    expect((await t.store.find('workflow_execution_set', {})).map((d) => d.id)).toEqual([
      'nmdc:wfmgas-11-other.1',
    ]);
    expect((await t.store.find('data_object_set', {})).map((d) => d.id)).toEqual([
      'nmdc:dobj-11-other',
      'nmdc:dobj-11-raw',
    ]);
  });

  it('refuses a cascade larger than its cap with a 422 naming it, before deleting anything', async () => {
    const outputs = Array.from({ length: 5 }, (_, i) => `nmdc:dobj-11-cap${i}`);
    await t.writer.upsertAll([
      { collection: 'workflow_execution_set', docs: [run('nmdc:wfmgas-11-cap.1', [], outputs)] },
      { collection: 'data_object_set', docs: outputs.map(dataObject) },
    ]);
    const deletion = new WorkflowExecutionDeletion(t.store, t.writer, 5);
    for (const attempt of [
      () => deletion.cascadeOf('nmdc:wfmgas-11-cap.1'),
      () => deletion.delete('nmdc:wfmgas-11-cap.1'),
    ])
      await expect(attempt()).rejects.toThrow(
        'Deleting workflow execution nmdc:wfmgas-11-cap.1 would delete more than 5 records; delete some of its downstream workflow executions first.',
      );
    await expect(deletion.cascadeOf('nmdc:wfmgas-11-cap.1')).rejects.toBeInstanceOf(Unprocessable);
    expect(await t.store.count('data_object_set', { id: { $in: outputs } })).toBe(5);
    // Six records fit a cap of six.
    const roomy = new WorkflowExecutionDeletion(t.store, t.writer, 6);
    expect((await roomy.delete('nmdc:wfmgas-11-cap.1')).deleted_data_object_ids).toEqual(outputs);
  });
});
