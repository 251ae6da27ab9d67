// Workbook, log alerts and the (optional) e-mail action group, all over Application Insights.
//
// ===== The app's custom metrics (customMetrics table) =====================================================
// This list is the one place the metric names are written down for operators; the telemetry code emits
// exactly these, and test/unit/infra.observability.test.ts checks that every query in this file uses only
// names from it. The code's list is shared/telemetry/metric-names.ts (test/unit/telemetry.metrics.test.ts keeps
// the two in line; asyncresponse.responses.published is sent but not charted, so it is not listed here).
//
//   metric                                         kind     customDimensions
//   asyncresponse.jobs.published                   counter  queue
//   asyncresponse.jobs.claimed                     counter  queue
//   asyncresponse.jobs.completed                   counter  queue
//   asyncresponse.jobs.failed                      counter  queue, outcome (redelivered | deadlettered)
//   asyncresponse.jobs.deadlettered                counter  queue
//   asyncresponse.jobs.redelivered                 counter  queue, outcome (failed | released)
//   asyncresponse.queue.ready                      gauge    queue   (rows claimable now)
//   asyncresponse.queue.delayed                    gauge    queue   (rows available later)
//   asyncresponse.queue.leased                     gauge    queue   (rows claimed, lease not expired)
//   asyncresponse.queue.deadlettered               gauge    queue   (dead letters from this queue)
//   asyncresponse.queue.oldest_ready_age_seconds   gauge    queue
//   asyncresponse.drain.duration_ms                value    queue, outcome (why it stopped: idle | budget | shutdown | error)
//   asyncresponse.channel.sweep.duration_ms        value    -       (one channel sweep)
//   asyncresponse.prune.deleted                    counter  table   (rows pruned: deadletters | messages | subscribers | recovery)
//
// Counters are read with sum(valueSum), gauges with max(valueMax), durations with sum(valueSum)/sum(valueCount)
// (mean) and max(valueMax): those columns are right whether a row holds one sample or a pre-aggregated window.
// ===========================================================================================================

@description('Application Insights resource id: scope of the queries and the alerts.')
param appInsightsId string

@description('Azure region for the workbook and the alert rules.')
param location string

@description('Tags for the resources.')
param tags object = {}

@description('Prefix for the alert rule and action group names.')
param namePrefix string

@description('E-mail address for alert notifications; empty = alerts fire in the portal only (no action group).')
param alertEmail string = ''

@description('Alert when the oldest ready job of a queue is older than this many seconds.')
@minValue(1)
param oldestReadyAgeThresholdSeconds int = 300

@description('Alert when more than this many jobs are dead-lettered on one queue within the 15-minute window.')
@minValue(0)
param deadLetterThreshold int = 0

var actionGroupName = '${namePrefix}-alerts'
var actionGroupIds = empty(alertEmail) ? [] : [
  resourceId('Microsoft.Insights/actionGroups', actionGroupName)
]

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = if (!empty(alertEmail)) {
  name: actionGroupName
  location: 'global'
  tags: tags
  properties: {
    groupShortName: 'asyncresp' // at most 12 characters
    enabled: true
    emailReceivers: [
      {
        name: 'operators'
        emailAddress: alertEmail
        useCommonAlertSchema: true
      }
    ]
  }
}

// ----------------------------------------------------------------------------------------------------------
// Queries (Application Insights schema: customMetrics, requests, traces).
// ----------------------------------------------------------------------------------------------------------

var throughputQuery = '''
customMetrics
| where name in ("asyncresponse.jobs.published", "asyncresponse.jobs.claimed", "asyncresponse.jobs.completed", "asyncresponse.jobs.failed", "asyncresponse.jobs.deadlettered", "asyncresponse.jobs.redelivered")
| summarize jobs = sum(valueSum) by metric = replace_string(name, "asyncresponse.jobs.", ""), bin(timestamp, 5m)
| render timechart
'''

var queueDepthQuery = '''
customMetrics
| where name in ("asyncresponse.queue.ready", "asyncresponse.queue.delayed", "asyncresponse.queue.leased", "asyncresponse.queue.deadlettered")
| extend queue = tostring(customDimensions.queue), state = replace_string(name, "asyncresponse.queue.", "")
| summarize rows = max(valueMax) by series = strcat(queue, " ", state), bin(timestamp, 5m)
| render timechart
'''

var oldestReadyAgeQuery = '''
customMetrics
| where name == "asyncresponse.queue.oldest_ready_age_seconds"
| summarize seconds = max(valueMax) by queue = tostring(customDimensions.queue), bin(timestamp, 5m)
| render timechart
'''

var deadLettersQuery = '''
customMetrics
| where name in ("asyncresponse.jobs.deadlettered", "asyncresponse.queue.deadlettered", "asyncresponse.prune.deleted")
| where name != "asyncresponse.prune.deleted" or tostring(customDimensions.table) == "deadletters"
| extend queue = tostring(customDimensions.queue)
| summarize total = sum(valueSum), peak = max(valueMax) by name, queue, bin(timestamp, 15m)
| summarize waiting = sum(peak), moved = sum(total) by name, timestamp
| extend value = iff(name == "asyncresponse.queue.deadlettered", waiting, moved)
| project timestamp, series = replace_string(name, "asyncresponse.", ""), value
| render timechart
'''

var durationsQuery = '''
customMetrics
| where name in ("asyncresponse.drain.duration_ms", "asyncresponse.channel.sweep.duration_ms")
| extend queue = tostring(customDimensions.queue)
| summarize mean_ms = sum(valueSum) / sum(valueCount), max_ms = max(valueMax) by series = trim_end(" ", strcat(replace_string(name, "asyncresponse.", ""), " ", queue)), bin(timestamp, 15m)
| render timechart
'''

var timerInvocationsQuery = '''
requests
| where name startswith "drain-" or name startswith "prune-" or name startswith "sweep-" or name == "queue-metrics"
| summarize invocations = count(), failed = countif(success == false), p50_ms = percentile(duration, 50), p95_ms = percentile(duration, 95), max_ms = max(duration) by name
| order by name asc
'''

var drainErrorsQuery = '''
traces
| where operation_Name startswith "drain-" and severityLevel >= 3
| project timestamp, operation_Name, message
| order by timestamp desc
| take 50
'''

// Alert: dead letters rising (any job dead-lettered on a queue within the window, by default).
var deadLetterAlertQuery = '''
customMetrics
| where name == "asyncresponse.jobs.deadlettered"
| extend queue = tostring(customDimensions.queue)
| summarize DeadLettered = sum(valueSum) by queue
'''

// Alert: the oldest ready job waits too long (drains are not keeping up, or not running).
var oldestReadyAgeAlertQuery = '''
customMetrics
| where name == "asyncresponse.queue.oldest_ready_age_seconds"
| extend queue = tostring(customDimensions.queue)
| summarize AgeSeconds = max(valueMax) by queue
'''

// Alert: the app's metrics stopped arriving (the app is down, its timers do not run, or ingestion fails). The
// queue-metrics timer sends the oldest-ready-age gauge of every queue, even when it is 0: every 5 minutes with the
// DRAIN_TRIGGER=queue this template sets (every minute in timer mode). "Stopped" means gauges arrived within the
// rule's query range (overrideQueryTimeRange, 2 days) but none for more than 15 minutes: a fresh deployment,
// which has sent no gauge yet, returns no row and does not alert. After 2 days of silence the row goes and the
// alert resolves itself.
var metricsStoppedAlertQuery = '''
customMetrics
| where name == "asyncresponse.queue.oldest_ready_age_seconds"
| summarize LastGauge = max(timestamp)
| where isnotnull(LastGauge)
| project MinutesSilent = datetime_diff('minute', now(), LastGauge)
'''

// Alerts: drain failures, as two rules because a log search alert query must start with a table (Azure Monitor
// refuses to create or update a rule whose query starts with union or search, "Optimize log search alert
// queries"). A drain invocation that throws is a failed request; a drain whose claims keep failing (database
// down, throttled past its budget) logs an error and ends without throwing, so error traces from drain-*
// invocations alert too.
var drainFailedRequestsAlertQuery = '''
requests
| where name startswith "drain-" and success == false
| project timestamp, name
'''

var drainErrorTracesAlertQuery = '''
traces
| where operation_Name startswith "drain-" and severityLevel >= 3
| project timestamp, operation_Name
'''

// ----------------------------------------------------------------------------------------------------------
// Workbook
// ----------------------------------------------------------------------------------------------------------

var dayMs = 86400000

var workbookContent = {
  version: 'Notebook/1.0'
  items: [
    {
      type: 1
      name: 'intro'
      content: {
        json: '## asyncresponse: queues and drains\nCustom metrics from the app (see docs/azure.md, "Monitor") and the timer invocations from the Functions host. Last 24 hours; edit a query to change the range.'
      }
    }
    {
      type: 3
      name: 'throughput'
      content: {
        version: 'KqlItem/1.0'
        title: 'Throughput: jobs per 5 minutes'
        query: throughputQuery
        size: 0
        timeContext: {
          durationMs: dayMs
        }
        queryType: 0
        resourceType: 'microsoft.insights/components'
        crossComponentResources: [
          appInsightsId
        ]
        visualization: 'timechart'
      }
    }
    {
      type: 3
      name: 'queue-depth'
      content: {
        version: 'KqlItem/1.0'
        title: 'Queue depth by state'
        query: queueDepthQuery
        size: 0
        timeContext: {
          durationMs: dayMs
        }
        queryType: 0
        resourceType: 'microsoft.insights/components'
        crossComponentResources: [
          appInsightsId
        ]
        visualization: 'timechart'
      }
    }
    {
      type: 3
      name: 'oldest-ready-age'
      content: {
        version: 'KqlItem/1.0'
        title: 'Oldest ready job age (seconds)'
        query: oldestReadyAgeQuery
        size: 0
        timeContext: {
          durationMs: dayMs
        }
        queryType: 0
        resourceType: 'microsoft.insights/components'
        crossComponentResources: [
          appInsightsId
        ]
        visualization: 'timechart'
      }
    }
    {
      type: 3
      name: 'dead-letters'
      content: {
        version: 'KqlItem/1.0'
        title: 'Dead letters: moved, waiting, pruned'
        query: deadLettersQuery
        size: 0
        timeContext: {
          durationMs: dayMs
        }
        queryType: 0
        resourceType: 'microsoft.insights/components'
        crossComponentResources: [
          appInsightsId
        ]
        visualization: 'timechart'
      }
    }
    {
      type: 3
      name: 'durations'
      content: {
        version: 'KqlItem/1.0'
        title: 'Drain and sweep duration (ms)'
        query: durationsQuery
        size: 0
        timeContext: {
          durationMs: dayMs
        }
        queryType: 0
        resourceType: 'microsoft.insights/components'
        crossComponentResources: [
          appInsightsId
        ]
        visualization: 'timechart'
      }
    }
    {
      type: 3
      name: 'timer-invocations'
      content: {
        version: 'KqlItem/1.0'
        title: 'Timer invocations'
        query: timerInvocationsQuery
        size: 0
        timeContext: {
          durationMs: dayMs
        }
        queryType: 0
        resourceType: 'microsoft.insights/components'
        crossComponentResources: [
          appInsightsId
        ]
        visualization: 'table'
      }
    }
    {
      type: 3
      name: 'drain-errors'
      content: {
        version: 'KqlItem/1.0'
        title: 'Latest errors logged by drains'
        query: drainErrorsQuery
        size: 0
        timeContext: {
          durationMs: dayMs
        }
        queryType: 0
        resourceType: 'microsoft.insights/components'
        crossComponentResources: [
          appInsightsId
        ]
        visualization: 'table'
      }
    }
  ]
  isLocked: false
  fallbackResourceIds: [
    appInsightsId
  ]
}

resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  // A workbook's resource name must be a GUID; a deterministic one keeps redeployments idempotent.
  name: guid(resourceGroup().id, appInsightsId, 'asyncresponse-workbook')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: 'asyncresponse: queues and drains'
    category: 'workbook'
    // lower case: the workbooks service matches sourceId case-sensitively against the component's (lower-case)
    // id, and a mixed-case one keeps the workbook out of the component's Workbooks gallery
    sourceId: toLower(appInsightsId)
    version: 'Notebook/1.0'
    serializedData: string(workbookContent)
  }
}

// ----------------------------------------------------------------------------------------------------------
// Log alert rules (evaluated every 5 minutes over the last 15).
// ----------------------------------------------------------------------------------------------------------

resource deadLetterAlert 'Microsoft.Insights/scheduledQueryRules@2021-08-01' = {
  name: '${namePrefix}-dead-letters-rising'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'asyncresponse: jobs dead-lettered'
    description: 'More than ${deadLetterThreshold} jobs were dead-lettered on a queue in 15 minutes. Inspect GET /api/queues/{queue}/deadletters for the reasons.'
    severity: 2
    enabled: true
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: deadLetterAlertQuery
          timeAggregation: 'Total'
          metricMeasureColumn: 'DeadLettered'
          dimensions: [
            {
              name: 'queue'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: deadLetterThreshold
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actionGroupIds
    }
  }
  // The action group is referenced by id (it may not exist), so the order is stated here.
  dependsOn: [
    actionGroup
  ]
}

resource oldestReadyAgeAlert 'Microsoft.Insights/scheduledQueryRules@2021-08-01' = {
  name: '${namePrefix}-oldest-ready-age'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'asyncresponse: oldest ready job too old'
    description: 'The oldest ready job of a queue waited more than ${oldestReadyAgeThresholdSeconds} s: drains are not keeping up or not running.'
    severity: 2
    enabled: true
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: oldestReadyAgeAlertQuery
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'AgeSeconds'
          dimensions: [
            {
              name: 'queue'
              operator: 'Include'
              values: [
                '*'
              ]
            }
          ]
          operator: 'GreaterThan'
          threshold: oldestReadyAgeThresholdSeconds
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actionGroupIds
    }
  }
  // The action group is referenced by id (it may not exist), so the order is stated here.
  dependsOn: [
    actionGroup
  ]
}

resource metricsStoppedAlert 'Microsoft.Insights/scheduledQueryRules@2021-08-01' = {
  name: '${namePrefix}-metrics-stopped'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'asyncresponse: metrics stopped'
    description: 'Queue gauges arrived in the last 2 days but none for over 15 minutes: the app or its queue-metrics timer is not running, or telemetry ingestion fails (the other alerts cannot fire without data).'
    severity: 2
    enabled: true
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    // the query looks back 2 days (the most a log search alert allows) to tell "stopped" from "never started"
    overrideQueryTimeRange: 'P2D'
    criteria: {
      allOf: [
        {
          query: metricsStoppedAlertQuery
          timeAggregation: 'Maximum'
          metricMeasureColumn: 'MinutesSilent'
          operator: 'GreaterThan'
          threshold: 15
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actionGroupIds
    }
  }
  // The action group is referenced by id (it may not exist), so the order is stated here.
  dependsOn: [
    actionGroup
  ]
}

resource drainFailedRequestsAlert 'Microsoft.Insights/scheduledQueryRules@2021-08-01' = {
  name: '${namePrefix}-drain-failures'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'asyncresponse: drain invocations failed'
    description: 'A drain-* timer invocation failed (threw). Its errors are in the exceptions and traces tables.'
    severity: 1
    enabled: true
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: drainFailedRequestsAlertQuery
          timeAggregation: 'Count'
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actionGroupIds
    }
  }
  // The action group is referenced by id (it may not exist), so the order is stated here.
  dependsOn: [
    actionGroup
  ]
}

resource drainErrorTracesAlert 'Microsoft.Insights/scheduledQueryRules@2021-08-01' = {
  name: '${namePrefix}-drain-errors'
  location: location
  tags: tags
  kind: 'LogAlert'
  properties: {
    displayName: 'asyncresponse: drains logged errors'
    description: 'A drain-* timer invocation logged an error: claims failing, database unreachable or throttled (such a drain ends without throwing, so the failed-invocation rule does not see it).'
    severity: 1
    enabled: true
    scopes: [
      appInsightsId
    ]
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    criteria: {
      allOf: [
        {
          query: drainErrorTracesAlertQuery
          timeAggregation: 'Count'
          operator: 'GreaterThan'
          threshold: 0
          failingPeriods: {
            numberOfEvaluationPeriods: 1
            minFailingPeriodsToAlert: 1
          }
        }
      ]
    }
    autoMitigate: true
    actions: {
      actionGroups: actionGroupIds
    }
  }
  // The action group is referenced by id (it may not exist), so the order is stated here.
  dependsOn: [
    actionGroup
  ]
}

@description('Workbook resource id.')
output workbookId string = workbook.id
